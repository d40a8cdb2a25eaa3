// The sandbox runner's pure pieces: bubblewrap's arguments, the command's environment, domain
// matching, the output bound and the verdict on how a command ended; and the egress allowlist
// setting. The real sandbox is exercised in test/components/bwrap-*.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { BoundedOutput, bwrapArgs, type CommandLimits, commandEnv, domainRefusal, EgressProxy, limitArgs, matchesDomain, utf8Boundary, verdict } from '#libs/sandbox';

const LIMITS: CommandLimits = { timeoutS: 5, cpuS: 10, memoryMb: 256, processes: 32, fileSizeMb: 8, outputBytes: 100 };
const ROOTS = [
  { name: 'bin', symlink: 'usr/bin' },
  { name: 'lib', symlink: 'usr/lib' },
];

describe('sandbox: bubblewrap arguments', () => {
  const args = bwrapArgs({ workspaceDir: '/data/ws/abc', limits: LIMITS, rootEntries: ROOTS, proxySocket: null, command: 'echo "hi"; exit 2' });
  const pairs = (flag: string) => args.flatMap((arg, i) => (arg === flag ? [args.slice(i + 1, i + 3).join(' ')] : []));

  it('unshares every namespace, nested user namespaces too, and drops every capability', () => {
    for (const flag of ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session']) assert.ok(args.includes(flag), flag);
    assert.deepEqual(pairs('--cap-drop'), ['ALL --hostname']);
    assert.ok(!args.includes('--share-net'));
  });

  it('binds the host read-only, the workspace alone writable, and only named /etc files', () => {
    assert.deepEqual(pairs('--bind'), ['/data/ws/abc /workspace']);
    assert.ok(pairs('--ro-bind').includes('/usr /usr'));
    assert.ok(pairs('--symlink').includes('usr/bin /bin'));
    const etc = pairs('--ro-bind-try').map((pair) => pair.split(' ')[0]);
    assert.ok(etc.every((path) => path.startsWith('/etc/')));
    assert.ok(etc.includes('/etc/passwd') && etc.includes('/etc/ssl/certs'));
    for (const secret of ['/etc/shadow', '/etc/gshadow', '/etc/ssh', '/etc/sudoers']) assert.ok(!args.includes(secret), secret);
    // The root and /dev read-only once mounted, after every other mount.
    assert.deepEqual(args.slice(args.indexOf('--remount-ro'), args.indexOf('--remount-ro') + 4), ['--remount-ro', '/dev', '--remount-ro', '/']);
    assert.ok(args.indexOf('--remount-ro') > args.indexOf('--bind'));
  });

  it('bounds the private /tmp and /dev/shm, and runs the command, as one argument, under prlimit', () => {
    assert.deepEqual(pairs('--size'), [`${8 * 1024 * 1024} --tmpfs`, `${8 * 1024 * 1024} --tmpfs`]);
    const end = args.slice(args.indexOf('--') + 1);
    assert.deepEqual(end.slice(0, limitArgs(LIMITS).length), limitArgs(LIMITS));
    assert.equal(end.at(-1), 'echo "hi"; exit 2');
    assert.match(end.at(-3)!, /exec 2>&1; exec \/bin\/bash -lc "\$1"/);
  });

  it('sets every limit, soft and hard, the CPU time with a second of grace before SIGKILL', () => {
    assert.deepEqual(limitArgs(LIMITS), ['/usr/bin/prlimit', '--cpu=10:11', `--as=${256 * 1024 * 1024}`, '--nproc=32', `--fsize=${8 * 1024 * 1024}`, '--nofile=1024', '--core=0']);
  });

  it('binds the proxy socket and starts the forwarder only with network', () => {
    const online = bwrapArgs({ workspaceDir: '/w', limits: LIMITS, rootEntries: ROOTS, proxySocket: '/tmp/p/proxy.sock', command: 'true' });
    assert.ok(online.join(' ').includes('--ro-bind /tmp/p/proxy.sock /run/egress-proxy.sock'));
    assert.match(online.at(-3)!, /socat TCP-LISTEN:3128,bind=127\.0\.0\.1,reuseaddr,fork UNIX-CONNECT:\/run\/egress-proxy\.sock/);
    assert.ok(!args.join(' ').includes('socat'));
  });
});

describe('sandbox: the command\'s environment', () => {
  it('holds the basics and what the command was given, never the worker\'s variables', () => {
    process.env.YUXI_UNIT_SECRET = 'x';
    try {
      const env = commandEnv({ FOO: 'bar', HOME: '/tmp' }, false);
      assert.deepEqual(Object.keys(env).sort(), ['FOO', 'HOME', 'LANG', 'PATH', 'TERM', 'XDG_CACHE_HOME']);
      assert.equal(env.HOME, '/tmp');
      assert.equal(env.TERM, 'dumb');
    } finally {
      delete process.env.YUXI_UNIT_SECRET;
    }
  });

  it('points every proxy variable at the forwarder, over what the command set', () => {
    const env = commandEnv({ HTTPS_PROXY: 'http://evil:1', NO_PROXY: '*' }, true);
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy']) assert.equal(env[name], 'http://127.0.0.1:3128', name);
    assert.equal(env.NO_PROXY, '');
  });

  it('refuses a name that is not a variable name and a value holding NUL', () => {
    assert.throws(() => commandEnv({ 'A=B': 'x' }, false), /not an environment variable name/);
    assert.throws(() => commandEnv({ '': 'x' }, false), /not an environment variable name/);
    assert.throws(() => commandEnv({ A: 'x\0y' }, false), /NUL/);
  });
});

describe('sandbox: domain lists', () => {
  it('matches a domain and its subdomains, not look-alikes', () => {
    assert.ok(matchesDomain('example.com', 'example.com'));
    assert.ok(matchesDomain('api.Example.COM.', 'example.com'));
    assert.ok(matchesDomain('a.b.example.com', '*.example.com'));
    assert.ok(!matchesDomain('badexample.com', 'example.com'));
    assert.ok(!matchesDomain('example.com.evil.net', 'example.com'));
    assert.ok(!matchesDomain('example.com', ''));
  });

  it('applies blocked before allowed for restricted, nothing for enabled', () => {
    const network = { access: 'restricted' as const, allowedDomains: ['github.com'], blockedDomains: ['gist.github.com'] };
    assert.equal(domainRefusal(network, 'api.github.com'), null);
    assert.equal(domainRefusal(network, 'gist.github.com'), 'gist.github.com is a blocked domain (gist.github.com)');
    assert.equal(domainRefusal(network, 'pypi.org'), 'pypi.org is not in the allowed domains');
    assert.equal(domainRefusal({ ...network, allowedDomains: [] }, 'pypi.org'), null);
    assert.equal(domainRefusal({ ...network, access: 'enabled' }, 'gist.github.com'), null);
    assert.equal(domainRefusal({ ...network, access: 'disabled' }, 'github.com'), 'the network is disabled');
  });

  it('judges the address after the lists: private refused unless allowlisted (host, or host and port)', () => {
    const proxy = new EgressProxy({ allowedHosts: ['10.1.2.3:8080', 'mirror.internal'] });
    const open = { access: 'enabled' as const, allowedDomains: [], blockedDomains: [] };
    assert.deepEqual(proxy.judge(open, '10.1.2.3:8080', 80), { host: '10.1.2.3', port: 8080, allowPrivate: true });
    assert.deepEqual(proxy.judge(open, '10.1.2.3:9090', 80), { refusal: '10.1.2.3 is a private, loopback, link-local or reserved address' });
    assert.deepEqual(proxy.judge(open, '[::1]:443', 443), { refusal: '::1 is a private, loopback, link-local or reserved address' });
    assert.deepEqual(proxy.judge(open, 'mirror.internal', 80), { host: 'mirror.internal', port: 80, allowPrivate: true });
    // A name is judged by what it resolves to, at connect time.
    assert.deepEqual(proxy.judge(open, 'example.org:443', 443), { host: 'example.org', port: 443, allowPrivate: false });
    assert.ok('refusal' in proxy.judge(open, 'a b', 80));
  });
});

describe('sandbox: output bound', () => {
  it('keeps whole UTF-8 characters up to the bound, then drops and counts the rest', () => {
    const output = new BoundedOutput(10, 40);
    assert.equal(output.push(Buffer.from('héllo ')), 'héllo ');
    // 7 bytes kept, 3 left: "wö", and not half of the "é" after it.
    assert.equal(output.push(Buffer.from('wöééé')), 'wö');
    assert.equal(output.push(Buffer.from('more')), '');
    assert.equal(output.kept(), 'héllo wö');
    assert.equal(output.printed, 7 + 9 + 4);
    assert.equal(output.flooding, false);
    assert.equal(output.cutNote(), '\n[output cut at 10 bytes: 10 more bytes were dropped]\n');
    output.push(Buffer.alloc(30));
    assert.equal(output.flooding, true);
  });

  it('keeps a character split across chunks whole, and adds no cut note when nothing was cut', () => {
    const output = new BoundedOutput(100);
    const bytes = Buffer.from('€');
    assert.equal(output.push(bytes.subarray(0, 1)), '');
    assert.equal(output.push(bytes.subarray(1)), '€');
    assert.equal(output.cutNote(), '');
    assert.equal(output.note('command ended: x'), '\n[command ended: x]\n');
    assert.equal(output.text(), '€\n[command ended: x]\n');
  });

  it('never splits a character at the boundary', () => {
    const bytes = Buffer.from('aé');
    assert.equal(utf8Boundary(bytes, 2), 1);
    assert.equal(utf8Boundary(bytes, 3), 3);
    assert.equal(utf8Boundary(bytes, 0), 0);
  });
});

describe('sandbox: how a command ended', () => {
  const base = { status: 0, killedFor: null, forkFailed: false, printed: 0, outputTail: '' };

  it('says which limit ended it', () => {
    assert.deepEqual(verdict({ ...base, status: 152 }, LIMITS), { exitCode: null, limitHit: 'cpu', note: 'command ended: CPU time limit of 10 s reached' });
    assert.deepEqual(verdict({ ...base, status: 153 }, LIMITS), { exitCode: null, limitHit: 'file_size', note: 'command ended: file size limit of 8 MiB reached' });
    assert.equal(verdict({ ...base, status: 137, killedFor: 'timeout' }, LIMITS).note, 'command ended: wall time limit of 5 s reached');
    assert.equal(verdict({ ...base, status: 137, killedFor: 'timeout', forkFailed: true }, LIMITS).limitHit, 'processes');
    assert.equal(verdict({ ...base, status: 1, outputTail: 'Traceback...\nMemoryError\n' }, LIMITS).limitHit, 'memory');
    assert.equal(verdict({ ...base, status: 137, killedFor: 'output', printed: 70 * 1024 * 1024 }, LIMITS).limitHit, 'output');
  });

  it('keeps the command\'s own exit code otherwise', () => {
    assert.deepEqual(verdict({ ...base, status: 3 }, LIMITS), { exitCode: 3, limitHit: null, note: null });
    // Printing "MemoryError" and succeeding is not a limit.
    assert.deepEqual(verdict({ ...base, status: 0, outputTail: 'MemoryError' }, LIMITS), { exitCode: 0, limitHit: null, note: null });
    assert.deepEqual(verdict({ ...base, status: 137, killedFor: 'aborted' }, LIMITS), { exitCode: null, limitHit: null, note: 'command ended: stopped' });
  });
});

describe('sandbox: SANDBOX_EGRESS_ALLOWED_HOSTS', () => {
  const BASE = { DATABASE_URL: 'postgres://x', REDIS_URL: 'redis://x' };

  it('is parsed like MCP_ALLOWED_HOSTS, empty by default, a malformed entry stopping the start', () => {
    assert.deepEqual(new AppConfig(BASE).sandbox.egressAllowedHosts, []);
    assert.deepEqual(new AppConfig({ ...BASE, SANDBOX_EGRESS_ALLOWED_HOSTS: 'Mirror.Internal:8080, 10.0.0.5' }).sandbox.egressAllowedHosts, ['mirror.internal:8080', '10.0.0.5']);
    assert.throws(() => new AppConfig({ ...BASE, SANDBOX_EGRESS_ALLOWED_HOSTS: 'http://x/y' }), /SANDBOX_EGRESS_ALLOWED_HOSTS: not a host/);
  });
});
