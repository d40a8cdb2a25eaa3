// Where webhooks may be delivered (SSRF guard): the addresses refused, the URL check with an
// injected resolver, and the connect-time lookup that refuses a private resolution.
import assert from 'node:assert/strict';
import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import { describe, it } from 'node:test';
import { checkWebhookUrl, guardedLookup, isPublicAddress, WEBHOOK_BLOCKED_CODE } from '#libs/webhooks';

const PRIVATE = [
  '127.0.0.1',
  '127.255.0.9',
  '10.1.2.3',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.1.1',
  '169.254.169.254',
  '169.254.1.1',
  '100.64.0.1',
  '100.127.255.255',
  '0.0.0.0',
  '224.0.0.1',
  '255.255.255.255',
  '198.18.0.1',
  '192.0.2.10',
  '::1',
  '::',
  '0:0:0:0:0:0:0:1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  '::127.0.0.1',
  'fe80::1',
  'fe80::1%eth0',
  'fc00::1',
  'fd00:ec2::254',
  'ff02::1',
  '64:ff9b::a00:1',
  '64:ff9b::127.0.0.1',
  '2002:7f00:1::1',
  '2002:c0a8:101::',
  '2001:db8::1',
  '2001::1',
];
const PUBLIC = ['93.184.216.34', '8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:2800:220:1:248:1893:25c8:1946', '2001:4860:4860::8888', '::ffff:93.184.216.34', '64:ff9b::5db8:d822', '2002:5db8:d822::1'];

describe('isPublicAddress', () => {
  it('refuses private, loopback, link-local, unspecified, CGNAT, multicast, reserved and metadata addresses, plain or embedded in IPv6', () => {
    for (const ip of PRIVATE) assert.equal(isPublicAddress(ip), false, ip);
  });

  it('accepts public IPv4 and IPv6 addresses', () => {
    for (const ip of PUBLIC) assert.equal(isPublicAddress(ip), true, ip);
  });

  it('is false for what is not an IP address', () => {
    for (const text of ['', 'example.com', '256.1.1.1', '1.2.3', '[::1]', '1::2::3', 'gggg::1']) assert.equal(isPublicAddress(text), false, text);
  });
});

describe('checkWebhookUrl', () => {
  const dnsTable: Record<string, string[]> = {
    'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'internal.example.com': ['127.0.0.1'],
    'mixed.example.com': ['93.184.216.34', '10.0.0.7'],
    'empty.example.com': [],
  };
  const lookups: string[] = [];
  const resolve = async (host: string) => {
    lookups.push(host);
    const addresses = dnsTable[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses;
  };
  const reason = async (url: string, allowPrivate = false) => {
    const result = await checkWebhookUrl(url, allowPrivate, resolve);
    return result.ok ? 'ok' : result.reason;
  };

  it('accepts an https URL whose host resolves only to public addresses, and returns it parsed', async () => {
    const result = await checkWebhookUrl('https://hooks.example.com/webhooks?x=1', false, resolve);
    assert.ok(result.ok);
    assert.equal(result.url.href, 'https://hooks.example.com/webhooks?x=1');
    assert.equal(await reason('https://93.184.216.34/x'), 'ok');
    assert.equal(await reason('https://[2606:2800:220:1:248:1893:25c8:1946]/x'), 'ok');
  });

  it('refuses literal private addresses without asking DNS', async () => {
    lookups.length = 0;
    for (const host of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.0.10', '169.254.169.254', '100.64.0.1', '0.0.0.0', '[::1]', '[::ffff:127.0.0.1]', '[fe80::1]', '[fc00::1]', '[fd00:ec2::254]', '0x7f.1', '2130706433']) {
      assert.match(await reason(`https://${host}/hook`), /private, loopback, link-local/, host);
    }
    assert.deepEqual(lookups, []);
  });

  it('refuses a host that resolves to a private address, even among public ones', async () => {
    assert.match(await reason('https://internal.example.com/hook'), /resolves to an address that is a private, loopback, link-local/);
    assert.match(await reason('https://mixed.example.com/hook'), /resolves to/);
    assert.doesNotMatch(await reason('https://mixed.example.com/hook'), /10\.0\.0\.7/, 'which internal address is not told');
  });

  it('refuses a host that cannot be resolved', async () => {
    assert.match(await reason('https://nowhere.example.com/hook'), /cannot be resolved/);
    assert.match(await reason('https://empty.example.com/hook'), /cannot be resolved/);
  });

  it('requires an absolute https URL without credentials', async () => {
    assert.match(await reason('not a url'), /not a valid absolute URL/);
    assert.match(await reason('/relative/path'), /not a valid absolute URL/);
    assert.match(await reason('http://hooks.example.com/hook'), /must use https/);
    assert.match(await reason('ftp://hooks.example.com/hook'), /must use https/);
    assert.match(await reason('https://user:pass@hooks.example.com/hook'), /credentials in the URL are not allowed/);
    assert.match(await reason('https://user@hooks.example.com/hook'), /credentials/);
  });

  it('with allowPrivate, lets private addresses and http through, but still only http(s)', async () => {
    for (const url of ['http://127.0.0.1:3000/hook', 'https://[::1]/x', 'http://internal.example.com/hook', 'http://10.0.0.1/x']) {
      assert.equal(await reason(url, true), 'ok', url);
    }
    assert.match(await reason('ftp://127.0.0.1/x', true), /http or https/);
    assert.match(await reason('http://u:p@127.0.0.1/x', true), /credentials/);
  });
});

describe('guardedLookup', () => {
  type Answer = { err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };
  const lookup = (allowPrivate: boolean, hostname: string, options: LookupOptions, base?: typeof dns.lookup) =>
    new Promise<Answer>((resolve) => guardedLookup(allowPrivate, base)(hostname, options, (err, address, family) => resolve({ err, address, family })));
  /** A dns.lookup that always answers these addresses (all: true form), as a rebinding resolver could. */
  const answering = (addresses: LookupAddress[]) =>
    ((_host: string, _options: unknown, callback: (err: null, addresses: LookupAddress[]) => void) => callback(null, addresses)) as unknown as typeof dns.lookup;

  it('refuses localhost with EWEBHOOKBLOCKED, whether node asks for one address or all', async () => {
    assert.equal(WEBHOOK_BLOCKED_CODE, 'EWEBHOOKBLOCKED');
    for (const options of [{}, { all: true }, { all: false, family: 4 }]) {
      const { err } = await lookup(false, 'localhost', options);
      assert.equal(err?.code, WEBHOOK_BLOCKED_CODE, JSON.stringify(options));
    }
  });

  it('with allowPrivate, answers in the form asked for', async () => {
    const one = await lookup(true, 'localhost', { family: 4 });
    assert.equal(one.err, null);
    assert.equal(one.address, '127.0.0.1');
    assert.equal(one.family, 4);
    const all = await lookup(true, 'localhost', { all: true });
    assert.equal(all.err, null);
    assert.ok(Array.isArray(all.address) && all.address.length > 0 && all.address.every((entry) => typeof entry.address === 'string'));
  });

  it('refuses a host when any of its addresses is private (rebinding, mixed records), and answers for a public one', async () => {
    const mixed = answering([
      { address: '93.184.216.34', family: 4 },
      { address: '::1', family: 6 },
    ]);
    assert.equal((await lookup(false, 'rebound.example.com', {}, mixed)).err?.code, WEBHOOK_BLOCKED_CODE);
    const pub = answering([{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 }]);
    assert.deepEqual(await lookup(false, 'rebound.example.com', {}, pub), { err: null, address: '93.184.216.34', family: 4 });
    assert.deepEqual((await lookup(false, 'rebound.example.com', { all: true }, pub)).address, [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ]);
  });

  it('makes http.request fail with EWEBHOOKBLOCKED before connecting', async () => {
    const error = await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
      const request = http.request('http://localhost:9/hook', { method: 'POST', lookup: guardedLookup(false) }, () => reject(new Error('connected')));
      request.on('error', resolve);
      request.end('{}');
    });
    assert.equal(error.code, WEBHOOK_BLOCKED_CODE);
  });
});
