// The runner scripts' strictness (scripts/lib/test-tally.mjs): a run with a skipped or todo test, or
// a full run with another number of tests than test/test-counts.json records, fails; a filter word that names
// no file is an error. The reporter is driven by a real node --test run of a small file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadFromRoot, ROOT } from '../support/stack-scripts.js';

interface Checked {
  problems: string[];
  notes: string[];
}
interface TallyModule {
  checkTally(file: string, options: { suite: string; full: boolean; namePattern?: boolean; counts?: Record<string, number> }): Checked;
  selectFiles(files: string[], filter: string[]): { files?: string[]; error?: string };
  reporterArgs(tallyFile: string): string[];
  readCounts(): Record<string, unknown>;
}

const SAMPLE = `
import { describe, it, test } from 'node:test';
describe('a suite', () => {
  it('passes', () => {});
  it('is skipped', { skip: 'not here' }, () => {});
  it.todo('is still to write');
});
test('has a subtest', async (t) => {
  await t.test('the subtest', () => {});
});
describe.skip('a skipped suite', () => {
  it('one', () => {});
  it('two', () => {});
});
describe('a todo suite', { todo: 'later' }, () => {
  it('three', () => {});
});
`;

describe('test run tally', () => {
  let tally: TallyModule;
  let dir: string;

  /** Runs the sample file under node --test with the tally reporter; returns the tally file. */
  function run(name: string, extra: string[] = []): string {
    const tallyFile = path.join(dir, `${name}.json`);
    // A node --test child of a test process would report to it, not to its reporters.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const result = spawnSync(process.execPath, ['--test', ...extra, ...tally.reporterArgs(tallyFile), path.join(dir, 'sample.test.mjs')], { cwd: ROOT, env, encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr + result.stdout);
    return tallyFile;
  }

  before(async () => {
    tally = await loadFromRoot<TallyModule>('scripts/lib/test-tally.mjs');
    dir = mkdtempSync(path.join(os.tmpdir(), 'yuxi-tally-'));
    writeFileSync(path.join(dir, 'sample.test.mjs'), SAMPLE);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('counts tests as node does (suites are not tests, subtests are) and names the skipped and todo ones', () => {
    const file = run('all');
    const counted = JSON.parse(readFileSync(file, 'utf8')) as { tests: number; skipped: { test: string; reason: string }[]; todo: { test: string; reason: string }[] };
    assert.equal(counted.tests, 6);
    // A skipped or todo describe is named too: node reports nothing of the tests inside a skipped one.
    assert.deepEqual(counted.skipped.map((s) => [s.test.split(': ').at(-1), s.reason]), [['is skipped', 'not here'], ['a skipped suite', '']]);
    assert.deepEqual(counted.todo.map((s) => [s.test.split(': ').at(-1), s.reason]), [['is still to write', ''], ['a todo suite', 'later']]);

    const { problems } = tally.checkTally(file, { suite: 'sample', full: false });
    assert.ok(problems.some((line) => /2 test\(s\) skipped/.test(line)), problems.join('\n'));
    assert.ok(problems.some((line) => /is skipped \(not here\)/.test(line)), problems.join('\n'));
    assert.ok(problems.some((line) => /a skipped suite/.test(line)), problems.join('\n'));
    assert.ok(problems.some((line) => /2 todo test\(s\)/.test(line)), problems.join('\n'));
  });

  it('holds a full run to exactly the last known count, and only a full run', () => {
    const file = run('count');
    const fewer = tally.checkTally(file, { suite: 'sample', full: true, counts: { sample: 7 } });
    assert.ok(fewer.problems.some((line) => line.includes('6 tests ran, fewer than the last known 7') && line.includes('test/test-counts.json')), fewer.problems.join('\n'));
    // More is a failure too: tests added without raising the count would be slack a later loss hides in.
    const more = tally.checkTally(file, { suite: 'sample', full: true, counts: { sample: 4 } });
    assert.ok(more.problems.some((line) => line.includes('raise "sample"') && line.includes('to 6')), more.problems.join('\n'));
    const exact = tally.checkTally(file, { suite: 'sample', full: true, counts: { sample: 6 } });
    assert.ok(!exact.problems.some((line) => line.includes('last known')), exact.problems.join('\n'));
    const unknown = tally.checkTally(file, { suite: 'sample', full: true, counts: {} });
    assert.ok(unknown.problems.some((line) => line.includes('no count for "sample"')), unknown.problems.join('\n'));
    const filtered = tally.checkTally(file, { suite: 'sample', full: false, counts: { sample: 7 } });
    assert.ok(!filtered.problems.some((line) => line.includes('last known')), filtered.problems.join('\n'));
  });

  it('a name-pattern run does not count the tests the pattern leaves out as skipped, but still fails on a skip it ran into', () => {
    const file = run('pattern', ['--test-name-pattern=skipped|passes']);
    const { problems } = tally.checkTally(file, { suite: 'sample', full: false, namePattern: true });
    assert.ok(problems.some((line) => /is skipped \(not here\)/.test(line)), problems.join('\n'));
    assert.ok(!problems.some((line) => line.includes('does not match pattern')), problems.join('\n'));
  });

  it('a run that wrote no tally fails', () => {
    const { problems } = tally.checkTally(path.join(dir, 'never-written.json'), { suite: 'sample', full: false });
    assert.match(problems.join('\n'), /wrote no tally/);
  });

  it('every filter word must match a file; an empty word is refused', () => {
    const files = ['e2e/sse.test.js', 'e2e/steer.test.js', 'unit/sdk.test.js'];
    assert.deepEqual(tally.selectFiles(files, []), { files: [...files].sort() });
    assert.deepEqual(tally.selectFiles(files, ['steer', 'sdk']), { files: ['e2e/steer.test.js', 'unit/sdk.test.js'] });
    assert.match(tally.selectFiles(files, ['steer', 'stear']).error ?? '', /"stear"/);
    assert.match(tally.selectFiles(files, ['']).error ?? '', /empty filter word/);
    assert.match(tally.selectFiles([], []).error ?? '', /no test files/);
  });

  it('test/test-counts.json holds a count for each suite the scripts check', () => {
    const counts = tally.readCounts();
    for (const suite of ['test', 'test:faults', 'test:unit']) assert.equal(typeof counts[suite], 'number', suite);
  });
});
