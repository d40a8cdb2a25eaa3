// The deployment's outbound address policy (libs/outbound): every address class refused, the odd
// spellings of an address, the allowlist, and the guarded fetch that MCP requests go through,
// against local servers that record every connection (nothing may reach a refused address).
import assert from 'node:assert/strict';
import type dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { checkOutboundUrl, createGuardedFetch, isAllowedHost, isOutboundBlocked, isPublicAddress, OutboundBlockedError, parseAllowedHosts, ResponseTooLargeError } from '#libs/outbound';

const REFUSED = {
  loopback: ['127.0.0.1', '127.1.2.3', '::1', '0:0:0:0:0:0:0:1'],
  private: ['10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.0.10', 'fc00::1', 'fd12:3456::1'],
  linkLocal: ['169.254.1.1', 'fe80::1', 'fe80::1%eth0'],
  cgnat: ['100.64.0.1', '100.127.255.254'],
  metadata: ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '::ffff:169.254.169.254'],
  unspecified: ['0.0.0.0', '0.1.2.3', '::'],
  multicast: ['224.0.0.1', '239.255.255.250', 'ff02::1', 'ff0e::1'],
  reserved: ['240.0.0.1', '255.255.255.255', '198.18.0.1', '192.0.2.1', '2001:db8::1'],
  mapped: ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:0:127.0.0.1', '::127.0.0.1'],
  nat64: ['64:ff9b::127.0.0.1', '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b:1::1'],
  sixToFour: ['2002:7f00:1::', '2002:a9fe:a9fe::1', '2002:c0a8:101::'],
};

describe('outbound address policy: isPublicAddress', () => {
  for (const [kind, addresses] of Object.entries(REFUSED)) {
    it(`refuses ${kind} addresses`, () => {
      for (const ip of addresses) assert.equal(isPublicAddress(ip), false, ip);
    });
  }

  it('accepts public addresses, plain or embedded in IPv6', () => {
    for (const ip of ['8.8.8.8', '93.184.216.34', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) assert.equal(isPublicAddress(ip), true, ip);
  });
});

describe('outbound address policy: checkOutboundUrl', () => {
  const rules = { allowPrivate: false, httpsOnly: false };

  it('refuses the odd spellings of loopback and metadata addresses (decimal, octal, hex, short forms)', async () => {
    const spellings = [
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0x7f.0.0.1/',
      'http://0177.0.0.1/',
      'http://017700000001/',
      'http://127.1/',
      'http://0/',
      'http://2852039166/latest/meta-data/',
      'http://0xa9.0xfe.0xa9.0xfe/',
      'http://[::ffff:7f00:1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[2002:7f00:1::]/',
      'http://[fd00:ec2::254]/',
      'http://[::]/',
    ];
    for (const url of spellings) {
      const result = await checkOutboundUrl(url, rules, null);
      assert.equal(result.ok, false, url);
    }
  });

  it('refuses names resolving to any refused address, and accepts public ones', async () => {
    const resolve = async (host: string) => (host === 'mixed.example' ? ['8.8.8.8', '10.0.0.1'] : ['8.8.8.8']);
    assert.equal((await checkOutboundUrl('https://mixed.example/mcp', rules, resolve)).ok, false);
    assert.equal((await checkOutboundUrl('https://public.example/mcp', rules, resolve)).ok, true);
    // Without a resolver, a name is left to the connect-time check.
    assert.equal((await checkOutboundUrl('https://mixed.example/mcp', rules, null)).ok, true);
  });

  it('refuses other schemes, and plain http where https is required', async () => {
    assert.deepEqual(await checkOutboundUrl('file:///etc/passwd', rules, null), { ok: false, reason: 'the URL must use http or https' });
    assert.equal((await checkOutboundUrl('gopher://8.8.8.8/', rules, null)).ok, false);
    assert.equal((await checkOutboundUrl('http://8.8.8.8/', { ...rules, httpsOnly: true }, null)).ok, false);
  });
});

describe('outbound address policy: the allowlist', () => {
  it('parses host and host:port entries as URL normalises them, and refuses what is not a host', () => {
    assert.deepEqual(parseAllowedHosts(' Localhost , 127.0.0.1:8080,0x7f.1:9000, [::1]:81 ,'), ['localhost', '127.0.0.1:8080', '127.0.0.1:9000', '[::1]:81']);
    assert.deepEqual(parseAllowedHosts(''), []);
    for (const bad of ['http://x', 'a/b', 'u@h', 'h:port', '::1']) assert.throws(() => parseAllowedHosts(bad), /not a host/, bad);
  });

  it('matches a host on any port, or a host:port on its port (the scheme default when none)', () => {
    const allowed = parseAllowedHosts('localhost,127.0.0.1:8080,mcp.internal:443');
    assert.equal(isAllowedHost(new URL('http://localhost:1234/mcp'), allowed), true);
    assert.equal(isAllowedHost(new URL('http://127.0.0.1:8080/mcp'), allowed), true);
    assert.equal(isAllowedHost(new URL('http://127.0.0.1:8081/mcp'), allowed), false);
    assert.equal(isAllowedHost(new URL('https://mcp.internal/mcp'), allowed), true);
    assert.equal(isAllowedHost(new URL('http://mcp.internal/mcp'), allowed), false);
    assert.equal(isAllowedHost(new URL('http://10.0.0.1/'), []), false);
  });
});

/** A local HTTP server that records every connection made to it; `handler` answers. */
async function recordingServer(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => handler(req, res, body));
  });
  const record = { connections: 0, requests: [] as string[] };
  server.on('connection', () => (record.connections += 1));
  server.on('request', (req: http.IncomingMessage) => record.requests.push(`${req.method} ${req.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { port, record, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A dns.lookup that answers every name with `address` (as a rebinding resolver could). */
const resolvingTo = (address: string, family = 4) =>
  ((_host: string, _options: unknown, callback: (err: null, addresses: dns.LookupAddress[]) => void) => callback(null, [{ address, family }])) as unknown as typeof dns.lookup;

describe('outbound address policy: createGuardedFetch', () => {
  let target: Awaited<ReturnType<typeof recordingServer>>;
  let other: Awaited<ReturnType<typeof recordingServer>>;
  before(async () => {
    other = await recordingServer((_req, res) => res.end('other origin'));
    target = await recordingServer((req, res, body) => {
      if (req.url === '/cross') return res.writeHead(302, { location: `http://127.0.0.1:${other.port}/stolen` }).end();
      if (req.url === '/same') return res.writeHead(307, { location: '/echo' }).end();
      if (req.url === '/see-other') return res.writeHead(303, { location: '/echo' }).end();
      res.writeHead(200, { 'content-type': 'application/json', 'x-seen': 'yes' }).end(JSON.stringify({ method: req.method, url: req.url, body }));
    });
  });
  after(async () => {
    await target.close();
    await other.close();
  });
  const resetCounts = () => {
    target.record.connections = 0;
    other.record.connections = 0;
    target.record.requests.length = 0;
    other.record.requests.length = 0;
  };

  it('refuses a literal private address before anything is sent', async () => {
    resetCounts();
    const guarded = createGuardedFetch({ allowPrivate: false });
    await assert.rejects(guarded(`http://127.0.0.1:${target.port}/echo`, { method: 'POST', body: '{}' }), (error: unknown) => error instanceof OutboundBlockedError && /not allowed/.test(error.message));
    await assert.rejects(guarded(`http://[::ffff:127.0.0.1]:${target.port}/echo`), OutboundBlockedError);
    await assert.rejects(guarded(`http://2130706433:${target.port}/echo`), OutboundBlockedError);
    assert.equal(target.record.connections, 0);
  });

  it('refuses a name that resolves to a private address at connect time (localhost, DNS rebinding): nothing is sent', async () => {
    resetCounts();
    const guarded = createGuardedFetch({ allowPrivate: false });
    await assert.rejects(guarded(`http://localhost:${target.port}/echo`), (error: unknown) => isOutboundBlocked(error));
    // A name that was public when it was saved and answers loopback now.
    const rebound = createGuardedFetch({ allowPrivate: false, dnsLookup: resolvingTo('127.0.0.1') });
    await assert.rejects(rebound(`http://mcp.example.com:${target.port}/echo`, { method: 'POST', body: 'secret' }), (error: unknown) => isOutboundBlocked(error));
    const mapped = createGuardedFetch({ allowPrivate: false, dnsLookup: resolvingTo('::ffff:127.0.0.1', 6) });
    await assert.rejects(mapped(`http://mcp.example.com:${target.port}/echo`), (error: unknown) => isOutboundBlocked(error));
    assert.equal(target.record.connections, 0);
  });

  it('connects through its own lookup when private networks are allowed, and to allowlisted hosts only otherwise', async () => {
    resetCounts();
    const open = createGuardedFetch({ allowPrivate: true, dnsLookup: resolvingTo('127.0.0.1') });
    const answer = await open(`http://mcp.example.com:${target.port}/echo`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials' }), headers: { 'x-test': '1' } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-seen'), 'yes');
    assert.deepEqual(await answer.json(), { method: 'POST', url: '/echo', body: 'grant_type=client_credentials' });
    const listed = createGuardedFetch({ allowPrivate: false, allowedHosts: parseAllowedHosts(`localhost:${target.port}`) });
    assert.equal((await listed(`http://localhost:${target.port}/echo`)).status, 200);
    // Another port of the same host is not on the list.
    await assert.rejects(listed(`http://localhost:${other.port}/echo`), (error: unknown) => isOutboundBlocked(error));
    assert.equal(other.record.connections, 0);
  });

  it('fails a response body past maxResponseBytes instead of buffering it, and passes one within it', async () => {
    const big = await recordingServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // 2 MB in 64 KB writes (no Content-Length: the bound counts what arrives).
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      for (let i = 0; i < (req.url === '/small' ? 1 : 32); i++) res.write(chunk);
      res.end();
    });
    try {
      const bounded = createGuardedFetch({ allowPrivate: true, maxResponseBytes: 1024 * 1024 });
      const answer = await bounded(`http://127.0.0.1:${big.port}/big`);
      assert.equal(answer.status, 200);
      await assert.rejects(answer.text(), (error: unknown) => error instanceof ResponseTooLargeError || (error as { cause?: unknown }).cause instanceof ResponseTooLargeError);
      assert.equal((await (await bounded(`http://127.0.0.1:${big.port}/small`)).arrayBuffer()).byteLength, 64 * 1024);
    } finally {
      await big.close();
    }
  });

  it('follows a redirect within the origin, never across origins', async () => {
    resetCounts();
    const open = createGuardedFetch({ allowPrivate: true });
    const cross = await open(`http://127.0.0.1:${target.port}/cross`);
    assert.equal(cross.status, 302);
    assert.equal(other.record.connections, 0, 'the other origin was never contacted');
    const same = await open(`http://127.0.0.1:${target.port}/same`, { method: 'POST', body: 'kept' });
    assert.deepEqual(await same.json(), { method: 'POST', url: '/echo', body: 'kept' });
    const seeOther = await open(`http://127.0.0.1:${target.port}/see-other`, { method: 'POST', body: 'dropped' });
    assert.deepEqual(await seeOther.json(), { method: 'GET', url: '/echo', body: '' });
    const manual = await open(`http://127.0.0.1:${target.port}/same`, { redirect: 'manual' });
    assert.equal(manual.status, 307);
    await assert.rejects(open(`http://127.0.0.1:${target.port}/same`, { redirect: 'error' }), OutboundBlockedError);
  });

  it('refuses schemes other than http and https, and honours an aborted signal', async () => {
    const open = createGuardedFetch({ allowPrivate: true });
    await assert.rejects(open('file:///etc/passwd'), OutboundBlockedError);
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await assert.rejects(open(`http://127.0.0.1:${target.port}/echo`, { signal: controller.signal }), /stop/);
  });
});
