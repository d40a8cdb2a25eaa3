// A sandbox with network reaches out only through the worker's egress proxy (a unix socket bound
// in, socat on the sandbox's own loopback): the command's domain lists and the deployment's address
// policy apply to everything, with SANDBOX_EGRESS_ALLOWED_HOSTS as the only exception. Against
// local servers that count every request (nothing may reach a refused address).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BwrapSandbox, type CommandNetwork } from '#libs/sandbox';
import { runIn, SANDBOX_GID, SANDBOX_UID, workspaceRoot } from '../support/bwrap.js';

/** A server on the host's loopback answering `reached <path>`, counting requests. */
async function localServer(): Promise<{ port: number; hits(): number; close(): void }> {
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    res.end(`reached ${req.url}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, hits: () => hits, close: () => server.close() };
}

const restricted = (allowedDomains: string[], blockedDomains: string[]): CommandNetwork => ({ access: 'restricted', allowedDomains, blockedDomains });
/** curl through the proxy the environment names: the status, then the body. */
const curl = (url: string) => `curl -sS --max-time 10 -w 'status=%{http_code}\\n' ${url}; echo "curl=$?"`;

describe('BwrapSandbox: network through the egress proxy', () => {
  const root = workspaceRoot();
  let allowed: Awaited<ReturnType<typeof localServer>>;
  let private_: Awaited<ReturnType<typeof localServer>>;
  let sandbox: BwrapSandbox;

  before(async () => {
    allowed = await localServer();
    private_ = await localServer();
    sandbox = new BwrapSandbox({ uid: SANDBOX_UID, gid: SANDBOX_GID, egressAllowedHosts: [`127.0.0.1:${allowed.port}`] });
  });
  after(async () => {
    await sandbox.close();
    allowed.close();
    private_.close();
    root.remove();
  });

  it('reaches a host of the deployment\'s egress allowlist, by plain HTTP and through CONNECT', async () => {
    const dir = await root.workspace('allowed');
    const network = restricted(['127.0.0.1'], []);
    const result = await runIn(sandbox, dir, `echo $HTTP_PROXY; ${curl(`http://127.0.0.1:${allowed.port}/plain`)}; ${curl(`--proxytunnel http://127.0.0.1:${allowed.port}/tunnel`)}`, { network });
    assert.equal(result.exitCode, 0, result.output);
    assert.match(result.output, /^http:\/\/127\.0\.0\.1:3128\n/);
    assert.match(result.output, /reached \/plain\nstatus=200\ncurl=0/);
    assert.match(result.output, /reached \/tunnel\nstatus=200\ncurl=0/);
    assert.equal(allowed.hits(), 2);
  });

  it('refuses a private or loopback address outside the allowlist, whatever the lists say (403 with the reason)', async () => {
    const dir = await root.workspace('private');
    const before = private_.hits();
    const result = await runIn(
      sandbox,
      dir,
      [curl(`http://127.0.0.1:${private_.port}/`), curl(`http://localhost:${private_.port}/`), curl('http://169.254.169.254/latest/meta-data/'), curl(`--proxytunnel http://10.0.0.1:${private_.port}/`)].join('; '),
      { network: { access: 'enabled', allowedDomains: [], blockedDomains: [] } },
    );
    assert.equal(private_.hits(), before, result.output);
    assert.match(result.output, /127\.0\.0\.1 is a private, loopback, link-local or reserved address\nstatus=403/);
    assert.match(result.output, /localhost resolves to a private, loopback, link-local or reserved address\nstatus=403/);
    assert.match(result.output, /169\.254\.169\.254 is a private, loopback, link-local or reserved address\nstatus=403/);
    // A refused CONNECT: curl says so and gets no body through.
    assert.match(result.output, /CONNECT tunnel failed, response 403/);
  });

  it('refuses a blocked domain, and a domain outside the allowed ones, before any lookup', async () => {
    const dir = await root.workspace('domains');
    const result = await runIn(sandbox, dir, [curl('http://api.blocked.test/'), curl('http://elsewhere.test/'), curl('--proxytunnel https://sub.blocked.test/')].join('; '), {
      network: restricted(['allowed.test', 'blocked.test'], ['blocked.test']),
    });
    assert.match(result.output, /api\.blocked\.test is a blocked domain \(blocked\.test\)\nstatus=403/);
    assert.match(result.output, /elsewhere\.test is not in the allowed domains\nstatus=403/);
    assert.match(result.output, /CONNECT tunnel failed, response 403/);
  });

  it('has no way around the proxy: a direct connection finds no network', async () => {
    const dir = await root.workspace('direct');
    const before = allowed.hits();
    const result = await runIn(sandbox, dir, `curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:${allowed.port}/direct; echo "curl=$?"; cat < /dev/tcp/127.0.0.1/${allowed.port}; echo end`, {
      network: { access: 'enabled', allowedDomains: [], blockedDomains: [] },
    });
    assert.equal(allowed.hits(), before, result.output);
    assert.match(result.output, /curl=7/);
    assert.match(result.output, /end\n$/);
  });
});
