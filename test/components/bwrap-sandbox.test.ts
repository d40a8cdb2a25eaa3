// BwrapSandbox against the real bubblewrap: what a command sees and cannot reach (the host's
// private files, other workspaces, the worker's environment, the network), as the unprivileged
// sandbox user. The tests run as root, as `npm test` does in CI and containers: the sandbox then
// really drops to uid 65534 outside its user namespace too.
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { BwrapSandbox, prepareWorkspaceDir } from '#libs/sandbox';
import { runIn, SANDBOX_GID, SANDBOX_UID, workspaceRoot } from '../support/bwrap.js';

describe('BwrapSandbox: a command and its workspace', () => {
  const sandbox = new BwrapSandbox({ uid: SANDBOX_UID, gid: SANDBOX_GID });
  const root = workspaceRoot();
  after(async () => {
    await sandbox.close();
    root.remove();
  });

  it('runs bash -lc in /workspace as the sandbox user, stdout and stderr in one stream, files owned by that user outside', async () => {
    assert.equal(process.getuid?.(), 0, 'the sandbox tests run as root (the sandbox drops to uid 65534)');
    const dir = await root.workspace('basic');
    const chunks: string[] = [];
    const result = await runIn(sandbox, dir, 'pwd; id -u; echo out; echo err >&2; echo hello > made.txt; exit 3', { onOutput: (chunk) => chunks.push(chunk) });
    assert.equal(result.exitCode, 3);
    assert.equal(result.limitHit, null);
    assert.equal(result.output, `/workspace\n${SANDBOX_UID}\nout\nerr\n`);
    assert.equal(chunks.join(''), result.output);
    assert.ok(result.durationMs >= 0);
    const made = statSync(path.join(dir, 'made.txt'));
    assert.equal(made.uid, SANDBOX_UID);
    assert.equal(readFileSync(path.join(dir, 'made.txt'), 'utf8'), 'hello\n');
  });

  it('gives the command only the env it was given (with PATH, HOME, LANG, TERM), never the worker\'s', async () => {
    const dir = await root.workspace('env');
    process.env.YUXI_SANDBOX_TEST_SECRET = 'worker-secret-value';
    try {
      const result = await runIn(sandbox, dir, 'env; echo ---; tr "\\0" "\\n" < /proc/1/environ; echo ---; tr "\\0" "\\n" < /proc/self/environ', { env: { GREETING: 'hi there' } });
      assert.equal(result.exitCode, 0, result.output);
      assert.doesNotMatch(result.output, /worker-secret-value|YUXI_SANDBOX_TEST_SECRET|DATABASE_URL/);
      assert.match(result.output, /^GREETING=hi there$/m);
      assert.match(result.output, /^HOME=\/workspace$/m);
      assert.match(result.output, /^TERM=dumb$/m);
    } finally {
      delete process.env.YUXI_SANDBOX_TEST_SECRET;
    }
  });

  it('keeps the host\'s private files out: /etc/shadow, a root-only file outside, and one inside the workspace', async () => {
    const dir = await root.workspace('private');
    const outside = mkdtempSync(path.join(os.tmpdir(), 'yuxi-private-'));
    chmodSync(outside, 0o755);
    const secretFile = path.join(outside, 'secret.txt');
    writeFileSync(secretFile, 'host-private-content', { mode: 0o600 });
    // Root's file, 0600, in the workspace itself: the sandbox user may not read it.
    writeFileSync(path.join(dir, 'root-only.txt'), 'root-only-content', { mode: 0o600 });
    chownSync(path.join(dir, 'root-only.txt'), 0, 0);
    try {
      const result = await runIn(sandbox, dir, `cat /etc/shadow; cat ${secretFile}; ls ${outside}; cat /workspace/root-only.txt; ls /etc; ls /root; echo done`);
      assert.equal(result.exitCode, 0, result.output);
      assert.doesNotMatch(result.output, /host-private-content|root-only-content|root:[^:]*:\d+:/);
      assert.match(result.output, /\/etc\/shadow: No such file or directory/);
      assert.match(result.output, /root-only\.txt: Permission denied/);
      assert.doesNotMatch(result.output, /^shadow$|^gshadow$|^ssh$/m);
      assert.match(result.output, /done\n$/);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('lets the command write only in /workspace and its private /tmp', async () => {
    const dir = await root.workspace('writes');
    const result = await runIn(sandbox, dir, 'for p in /usr/x /etc/x /x /bin/x /proc/x /dev/x /run/x; do (echo a > $p) 2>/dev/null && echo "wrote $p"; done; echo t > /tmp/private && cat /tmp/private; echo s > /dev/shm/s && cat /dev/shm/s; echo n > /dev/null && echo null; echo w > /workspace/w && echo "wrote workspace"');
    assert.equal(result.exitCode, 0, result.output);
    assert.doesNotMatch(result.output, /wrote \/(usr|etc|x|bin|proc|dev|run)/);
    assert.equal(result.output, 't\ns\nnull\nwrote workspace\n');
    // /tmp is the sandbox's own: nothing of it reaches the host's /tmp.
    assert.throws(() => statSync('/tmp/private'));
  });

  it('does not show another workspace, the host\'s processes or its other folders', async () => {
    const mine = await root.workspace('mine');
    const other = await root.workspace('other');
    writeFileSync(path.join(other, 'theirs.txt'), 'other-session-content');
    chownSync(path.join(other, 'theirs.txt'), SANDBOX_UID, SANDBOX_GID);
    const result = await runIn(sandbox, mine, `cat ${other}/theirs.txt; ls ${root.root}; cat ../other/theirs.txt; ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '; echo; ls /; ls /home /var /opt /work 2>&1 | head -5`);
    assert.doesNotMatch(result.output, /other-session-content/);
    const lines = result.output.split('\n');
    const pids = Number(lines.find((line) => /^\d+$/.test(line)));
    // bwrap's init, sh/bash, and the pipeline: a handful, never the host's hundreds.
    assert.ok(pids > 0 && pids < 10, `processes seen: ${pids}\n${result.output}`);
    assert.match(result.output, /^bwrap /m);
    assert.match(result.output, /'\/home': No such file or directory/);
    assert.match(result.output, /'\/work': No such file or directory/);
  });

  it('has no network: a server on the host\'s loopback is out of reach (curl and bash\'s /dev/tcp)', async () => {
    const dir = await root.workspace('offline');
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.end('reached\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    try {
      const result = await runIn(sandbox, dir, `curl -sS --max-time 5 http://127.0.0.1:${port}/; cat < /dev/tcp/127.0.0.1/${port}; ip -o link 2>/dev/null | wc -l; echo end`);
      assert.doesNotMatch(result.output, /reached/);
      assert.match(result.output, /end\n$/);
      assert.equal(connections, 0);
    } finally {
      server.close();
    }
  });

  it('prepares a workspace owned by the sandbox user, and names a parent folder it could not pass', async () => {
    const closed = path.join(root.root, 'closed');
    // Folders made on the way are passable.
    const dir = await root.workspace('closed/inner');
    assert.equal(statSync(closed).mode & 0o777, 0o711);
    chmodSync(closed, 0o700);
    writeFileSync(path.join(dir, 'by-root.txt'), 'x');
    await assert.rejects(prepareWorkspaceDir(dir, SANDBOX_UID, SANDBOX_GID), new RegExp(`cannot pass through ${closed} `));
    chmodSync(closed, 0o711);
    await prepareWorkspaceDir(dir, SANDBOX_UID, SANDBOX_GID);
    assert.equal(statSync(path.join(dir, 'by-root.txt')).uid, SANDBOX_UID);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
  });

  it('fails, rather than answer an exit code, when the sandbox cannot start', async () => {
    await assert.rejects(runIn(sandbox, path.join(root.root, 'missing'), 'echo never'), /^Error: the sandbox could not start: bwrap: .*missing/);
  });

  it('refuses an environment variable name that is not one', async () => {
    const dir = await root.workspace('bad-env');
    await assert.rejects(runIn(sandbox, dir, 'true', { env: { 'A=B': 'x' } }), /not an environment variable name/);
  });

  it('ends the command when its signal aborts', async () => {
    const dir = await root.workspace('abort');
    const controller = new AbortController();
    const running = runIn(sandbox, dir, 'echo started; sleep 60', {
      signal: controller.signal,
      onOutput: (chunk) => {
        if (chunk.includes('started')) controller.abort(new Error('cancelled'));
      },
    });
    const result = await running;
    assert.equal(result.exitCode, null);
    assert.equal(result.limitHit, null);
    assert.match(result.output, /^started\n\[command ended: stopped\]\n$/);
  });

  it('ends the commands still running when it closes, and refuses new ones', async () => {
    const closing = new BwrapSandbox({ uid: SANDBOX_UID, gid: SANDBOX_GID });
    const dir = await root.workspace('closing');
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    const result = runIn(closing, dir, 'echo started; sleep 60', { onOutput: (chunk) => chunk.includes('started') && started() });
    await Promise.race([running, result]);
    await closing.close();
    const ended = await result;
    assert.equal(ended.exitCode, null);
    assert.match(ended.output, /\[command ended: stopped\]\n$/);
    await assert.rejects(runIn(closing, dir, 'true'), /closed/);
  });
});
