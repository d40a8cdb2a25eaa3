// What a test run must show to pass CI beyond its failures: no test skipped or left todo (a skipped
// test hides whatever it was meant to catch), and, on a full run, exactly the last known number
// of tests (test/test-counts.json): a file that stops loading its tests, or a describe that
// silently registers none, would otherwise pass as green.
//
// The default export is a node:test reporter (--test-reporter=<this file>): it writes one JSON
// line, the tally of the run, to its --test-reporter-destination. The runner scripts read that
// file with checkTally once node --test has exited.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Not build.mjs's ROOT: node --test loads this file as a reporter, which needs nothing else.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The file that holds the last known test count of each suite. */
export const COUNTS_FILE = path.join('test', 'test-counts.json');

/** Why node skips a test that --test-name-pattern leaves out (a filtered run, not a skipped test). */
const NAME_PATTERN_SKIP = 'test name does not match pattern';

/** Tallies every test (suites are not tests) as node's own summary does, and names the skipped and todo ones. */
export default async function* tallyReporter(source) {
  const tally = { tests: 0, failed: 0, skipped: [], todo: [] };
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    // A skipped or todo describe is checked before suites are left out of the count: node reports
    // the tests inside a skipped describe as nothing at all, so the suite's own flag is all there is.
    const where = `${data.file ? `${path.relative(process.cwd(), data.file)}: ` : ''}${data.name}`;
    if (data.skip !== undefined && data.skip !== false) tally.skipped.push({ test: where, reason: data.skip === true ? '' : String(data.skip) });
    if (data.todo !== undefined && data.todo !== false) tally.todo.push({ test: where, reason: data.todo === true ? '' : String(data.todo) });
    if (data.details?.type === 'suite') continue;
    tally.tests += 1;
    if (event.type === 'test:fail') tally.failed += 1;
  }
  yield `${JSON.stringify(tally)}\n`;
}

/**
 * What a finished run comes to: `problems` (lines for stderr; none: it passes) and `notes` (lines
 * for stdout that fail nothing). `suite` is the key in
 * test/test-counts.json and the npm script's name; `full` says the run was unfiltered (only a full
 * run is held to the count); `namePattern` says a --test-name-pattern filtered it.
 */
export function checkTally(tallyFile, { suite, full, namePattern = false, counts = readCounts() }) {
  if (!existsSync(tallyFile)) return { problems: [`the run wrote no tally (${tallyFile}); node --test did not finish`], notes: [] };
  const tally = JSON.parse(readFileSync(tallyFile, 'utf8').trim().split('\n').at(-1));
  const problems = [];
  const notes = [];
  // A suite the pattern leaves out is reported with the pattern's reason, as a skip or (a todo suite) a todo.
  const skipped = tally.skipped.filter((s) => !(namePattern && s.reason === NAME_PATTERN_SKIP));
  const todo = tally.todo.filter((s) => !(namePattern && s.reason === NAME_PATTERN_SKIP));
  if (skipped.length > 0) {
    problems.push(`${skipped.length} test(s) skipped; a test that cannot run here must fail or be removed, never skip:`);
    for (const s of skipped) problems.push(`  - ${s.test}${s.reason ? ` (${s.reason})` : ''}`);
  }
  if (todo.length > 0) {
    problems.push(`${todo.length} todo test(s); write the test or remove it:`);
    for (const s of todo) problems.push(`  - ${s.test}${s.reason ? ` (${s.reason})` : ''}`);
  }
  if (full) {
    const known = counts[suite];
    if (typeof known !== 'number') {
      problems.push(`${COUNTS_FILE} has no count for "${suite}"; add "${suite}": ${tally.tests}`);
    } else if (tally.tests < known) {
      problems.push(
        `${tally.tests} tests ran, fewer than the last known ${known} (${COUNTS_FILE}). A test file that no longer loads, ` +
          `or tests that stopped registering, show up here. If tests were removed on purpose, lower "${suite}" in ${COUNTS_FILE} to ${tally.tests} in the same commit.`,
      );
    } else if (tally.tests > known) {
      // Exact, not a floor: tests added without raising the count would be slack that a later loss
      // of as many tests hides in.
      problems.push(`${tally.tests} tests ran, more than the last known ${known}: raise "${suite}" in ${COUNTS_FILE} to ${tally.tests} in the commit that adds them, so that losing them later fails the run`);
    }
  }
  return { problems, notes };
}

/** The last known counts, by suite (test/test-counts.json). */
export function readCounts() {
  return JSON.parse(readFileSync(path.join(ROOT, COUNTS_FILE), 'utf8'));
}

/**
 * The test files (relative names) whose path contains one of the filter words, sorted, or why none
 * may run: every word must match at least one file (a misspelt word is an error, never a run of
 * nothing, of the rest, or of node's own discovery), and an empty word would match them all.
 */
export function selectFiles(files, filter) {
  if (filter.some((word) => word.trim() === '')) return { error: 'an empty filter word matches every file; name the files to run, or give no word for the full run' };
  const unmatched = filter.filter((word) => !files.some((file) => file.includes(word)));
  if (unmatched.length > 0) return { error: `no test file's path contains ${unmatched.map((w) => `"${w}"`).join(', ')} (among ${files.length} files); nothing was run` };
  const chosen = files.filter((file) => filter.length === 0 || filter.some((word) => file.includes(word))).sort();
  if (chosen.length === 0) return { error: 'no test files to run' };
  return { files: chosen };
}

/** selectFiles, or the reason on stderr and exit code 1. */
export function filterFiles(files, filter, script) {
  const selected = selectFiles(files, filter);
  if (selected.error) {
    console.error(`${script}: ${selected.error}`);
    process.exit(1);
  }
  return selected.files;
}

/** The node --test arguments that keep node's usual report on stdout and write the tally to `tallyFile`. */
export function reporterArgs(tallyFile) {
  // node's own default, which naming any reporter replaces: spec on a terminal (always from node 23), else TAP.
  const spec = process.stdout.isTTY || Number(process.versions.node.split('.')[0]) >= 23;
  return [
    `--test-reporter=${spec ? 'spec' : 'tap'}`,
    '--test-reporter-destination=stdout',
    `--test-reporter=${path.join(ROOT, 'scripts', 'lib', 'test-tally.mjs')}`,
    `--test-reporter-destination=${tallyFile}`,
  ];
}
