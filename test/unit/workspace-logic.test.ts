import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SandboxSettings } from '#libs/config';
import { applyUnifiedDiff, checkWorkspacePath, PATCH_MAX_HUNKS, commandLimits, diffManifests, type EnvironmentConfig, type Manifest, mergeOntoHead } from '#libs/environments';

// The environment's pure parts: the unified-diff applier, tools' path checks, and how a call's
// changes merge onto a workspace head another session moved meanwhile.
const files = (map: Record<string, string>) => (path: string) => map[path] ?? null;

describe('applyUnifiedDiff', () => {
  it('creates a new file from /dev/null', () => {
    const patch = '--- /dev/null\n+++ b/src/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n';
    assert.deepEqual(applyUnifiedDiff(patch, files({})), { ok: true, files: [{ path: 'src/new.txt', content: 'hello\nworld\n' }] });
  });

  it('deletes a file to /dev/null', () => {
    const patch = 'diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n';
    assert.deepEqual(applyUnifiedDiff(patch, files({ 'old.txt': 'one\ntwo\n' })), { ok: true, files: [{ path: 'old.txt', content: null }] });
  });

  it('applies several hunks and several files, shifting later hunks by earlier ones', () => {
    const a = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
    const patch = [
      '--- a/a.txt', '+++ b/a.txt',
      '@@ -2,3 +2,4 @@', ' line 2', '+inserted', ' line 3', ' line 4',
      '@@ -15,3 +16,2 @@', ' line 15', '-line 16', ' line 17',
      '--- a/b.txt', '+++ b/b.txt', '@@ -1 +1 @@', '-x', '+y', '',
    ].join('\n');
    const result = applyUnifiedDiff(patch, files({ 'a.txt': a, 'b.txt': 'x\n' }));
    assert.equal(result.ok, true);
    if (!result.ok) return;
    const [patchedA, patchedB] = result.files;
    assert.equal(patchedA!.content!.split('\n').slice(0, 5).join(','), 'line 1,line 2,inserted,line 3,line 4');
    assert.ok(!patchedA!.content!.includes('line 16\n'));
    assert.ok(patchedA!.content!.includes('line 15\nline 17\n'));
    assert.deepEqual(patchedB, { path: 'b.txt', content: 'y\n' });
  });

  it('refuses the whole patch when one hunk\'s context does not match, changing nothing', () => {
    const patch = '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n context that is not there\n-b\n+B\n';
    const result = applyUnifiedDiff(patch, files({ 'a.txt': 'a\n', 'b.txt': 'b\n' }));
    assert.equal(result.ok, false);
    if (!result.ok) assert.match(result.error, /b\.txt: hunk 1 .*does not apply/);
  });

  it('keeps a CRLF file CRLF, matching LF patch lines against it', () => {
    const patch = '--- a/win.txt\n+++ b/win.txt\n@@ -1,2 +1,3 @@\n first\n+middle\n last\n';
    assert.deepEqual(applyUnifiedDiff(patch, files({ 'win.txt': 'first\r\nlast\r\n' })), { ok: true, files: [{ path: 'win.txt', content: 'first\r\nmiddle\r\nlast\r\n' }] });
  });

  it('honours "\\ No newline at end of file" on either side', () => {
    const add = '--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-end\n\\ No newline at end of file\n+end\n';
    assert.deepEqual(applyUnifiedDiff(add, files({ 'n.txt': 'end' })), { ok: true, files: [{ path: 'n.txt', content: 'end\n' }] });
    const drop = '--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-end\n+fin\n\\ No newline at end of file\n';
    assert.deepEqual(applyUnifiedDiff(drop, files({ 'n.txt': 'end\n' })), { ok: true, files: [{ path: 'n.txt', content: 'fin' }] });
    // The old side says "no newline" but the file has one: refused.
    assert.equal(applyUnifiedDiff(add, files({ 'n.txt': 'end\n' })).ok, false);
  });

  it('refuses creating a file that exists, patching one that does not, and a patch without files', () => {
    assert.equal(applyUnifiedDiff('--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n', files({ x: 'x\n' })).ok, false);
    assert.equal(applyUnifiedDiff('--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x\n+y\n', files({})).ok, false);
    assert.equal(applyUnifiedDiff('just some text', files({})).ok, false);
    assert.equal(applyUnifiedDiff('--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-x\n+y\n', files({ x: 'x\n' })).ok, false);
  });

  it('finds a hunk whose header is off by far, the nearest match first', () => {
    const text = Array.from({ length: 5000 }, (_, i) => (i % 1000 === 0 ? 'mark' : `line ${i}`)).join('\n') + '\n';
    // Says line 2500 but the marks are at 2001 and 3001: the nearer one (lower on a tie) is patched.
    const result = applyUnifiedDiff('--- a/f\n+++ b/f\n@@ -2500 +2500 @@\n-mark\n+MARK\n', files({ f: text }));
    assert.ok(result.ok);
    assert.deepEqual(result.files[0]!.content!.split('\n').flatMap((line, i) => (line === 'MARK' ? [i] : [])), [2000]);
  });

  // What bounds the time is the patch tool's work budget (the refusal names it), not a clock: no timed assertion here.
  it('refuses a 10k-line context hunk that matches nowhere on a 5M-line file by its work budget, and applies it where its header says', () => {
    const lines = new Array<string>(5_000_000).fill('x');
    const text = lines.join('\n') + '\n';
    const context = new Array<string>(10_000).fill(' x');
    // Nowhere matches: every place agrees on 9,999 lines before the last differs; the work budget refuses it.
    const hostile = applyUnifiedDiff(['--- a/big', '+++ b/big', '@@ -1,10001 +1,10001 @@', ...context, '-y', '+z', ''].join('\n'), files({ big: text }));
    assert.equal(hostile.ok, false);
    assert.match(!hostile.ok ? hostile.error : '', /costs more than this tool allows.*nothing was changed/);
    // The same hunk where its header says (near line 4M), with a line that is there: applied.
    const good = applyUnifiedDiff(['--- a/big', '+++ b/big', '@@ -4000000,10001 +4000000,10001 @@', ...context, '-x', '+z', ''].join('\n'), files({ big: text }));
    assert.ok(good.ok);
    const content = good.files[0]!.content!;
    assert.equal(content.length, text.length);
    assert.equal(content.indexOf('z'), 2 * (4_000_000 - 1 + 10_000));
  });

  it('refuses a patch of more hunks than the bound', () => {
    const hunks = Array.from({ length: PATCH_MAX_HUNKS + 1 }, () => '@@ -1 +1 @@\n-a\n+a').join('\n');
    const result = applyUnifiedDiff(`--- a/f\n+++ b/f\n${hunks}\n`, files({ f: 'a\n' }));
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.error : '', /more than 10000/);
  });
});

describe('checkWorkspacePath', () => {
  it('takes relative paths and absolute ones under /workspace, normalised', () => {
    assert.deepEqual(checkWorkspacePath('src/./a.ts'), { ok: true, path: 'src/a.ts' });
    assert.deepEqual(checkWorkspacePath('/workspace/out//r.md'), { ok: true, path: 'out/r.md' });
    assert.deepEqual(checkWorkspacePath('.', { allowRoot: true }), { ok: true, path: '' });
  });

  it('refuses .., paths outside /workspace, NUL, and the root where a file is meant', () => {
    for (const bad of ['../etc/passwd', 'a/../../b', 'a/..', '/etc/shadow', '/workspaces/x', 'a\0b', '', '.', '/workspace']) {
      assert.equal(checkWorkspacePath(bad).ok, false, bad);
    }
    assert.equal(checkWorkspacePath(42).ok, false);
  });
});

describe('mergeOntoHead: per path, the last writer wins', () => {
  const e = (sha: string): [string, number, number] => [sha.padEnd(64, '0'), 1, 0o100644];
  it('keeps the head\'s paths the call did not touch and the call\'s writes and deletions', () => {
    const base: Manifest = { a: e('a'), b: e('b'), c: e('c') };
    const head: Manifest = { a: e('a2'), b: e('b'), c: e('c'), d: e('d') };
    const mine: Manifest = { a: e('a'), b: e('b3'), e: e('e') };
    const merged = mergeOntoHead(head, diffManifests(base, mine));
    assert.deepEqual(merged, { a: e('a2'), b: e('b3'), d: e('d'), e: e('e') });
  });

  it('a file the call wrote where the head has a directory replaces that directory', () => {
    const merged = mergeOntoHead({ 'x/y': e('y'), z: e('z') }, diffManifests({}, { x: e('x') }));
    assert.deepEqual(merged, { x: e('x'), z: e('z') });
  });
});

describe('commandLimits: the environment\'s limits under the deployment\'s ceilings', () => {
  const values = (n: number) => ({ timeoutS: n, cpuS: n, memoryMb: n, processes: n, diskMb: n });
  const sandbox = { defaults: values(100), ceilings: values(1000), outputMaxBytes: 4096, workspaceMaxFiles: 50 } as SandboxSettings;
  const environment = (limits: EnvironmentConfig['limits']): EnvironmentConfig => ({ type: 'openai_hosted', network: { access: 'disabled' }, env: {}, files: [], setup_commands: [], limits });

  it('takes the deployment\'s defaults where the environment sets none, and caps what it asks at the ceilings', () => {
    assert.deepEqual(commandLimits(environment({}), sandbox), { timeoutS: 100, cpuS: 100, memoryMb: 100, processes: 100, fileSizeMb: 100, diskBytes: 100 * 1024 * 1024, maxFiles: 50, outputBytes: 4096 });
    assert.deepEqual(commandLimits(environment({ timeout_s: 5000, cpu_s: 10, memory_mb: 2000, processes: 3, disk_mb: 5000 }), sandbox), {
      timeoutS: 1000, cpuS: 10, memoryMb: 1000, processes: 3, fileSizeMb: 1000, diskBytes: 1000 * 1024 * 1024, maxFiles: 50, outputBytes: 4096,
    });
  });

  it('a shell call\'s timeout_s may shorten the session\'s timeout, never lengthen it', () => {
    assert.equal(commandLimits(environment({ timeout_s: 60 }), sandbox, 10).timeoutS, 10);
    assert.equal(commandLimits(environment({ timeout_s: 60 }), sandbox, 600).timeoutS, 60);
  });
});
