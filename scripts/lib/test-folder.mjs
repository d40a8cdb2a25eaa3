// The runner of `npm run test:unit` and `npm run test:components`: the test files of one folder of
// test/, without a stack. tsc compiles the libs, test/unit, test/components and test/support into
// dist/ (tsconfig.unit.json) in build mode, which skips the compiler altogether when no source is
// newer than the last build; then node's test runner runs the folder's files, one process each.
//
// A skipped or todo test fails the run; so does a full run (no filter words) with another number
// of tests than test/test-counts.json records under the suite's name.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, ROOT } from './build.mjs';
import { checkTally, filterFiles, reporterArgs } from './test-tally.mjs';

/**
 * Runs test/<folder>'s files (those whose path contains one of `filter`'s words, when given) as
 * `suite`; exits the process. `shareProcesses`: the files run in one process per core rather than
 * one per file (see batchFiles).
 */
export async function runTestFolder({ suite, folder, filter, shareProcesses = false }) {
  const prefix = `[${suite}]`;
  await ensureBuilt(console.log, { tscArgs: ['-b', 'tsconfig.unit.json'], buildInfo: 'dist/.tsbuildinfo-unit', prefix });

  const testDir = path.join(ROOT, 'dist', 'test', folder);
  const candidates = readdirSync(testDir, { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.test.js'))
    // A test deleted from test/<folder> leaves its compiled file in dist/: not run.
    .filter((file) => existsSync(path.join(ROOT, 'test', folder, file.replace(/\.js$/, '.ts'))));
  // Each word must name a file: a misspelt one is an error, not a run of the rest (or of nothing).
  const files = filterFiles(candidates, filter, suite).map((file) => path.join(testDir, file));
  const tallyFile = path.join(os.tmpdir(), `yuxi-${suite.replace(':', '-')}-tally-${process.pid}.json`);
  rmSync(tallyFile, { force: true });

  // No stack here, whatever the shell has: a test that needs Postgres or Redis belongs in test/e2e,
  // and fails here rather than reaching a server the shell happens to name.
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;

  // Processes run in parallel: as many at a time as there are cores, at least two.
  const concurrency = Math.max(2, os.availableParallelism());
  const batchDir = shareProcesses ? mkdtempSync(path.join(os.tmpdir(), `yuxi-${suite.replace(':', '-')}-`)) : null;
  const entries = batchDir ? batchFiles(files, concurrency, batchDir) : files;
  const child = spawn(process.execPath, ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, ...reporterArgs(tallyFile), ...entries], { cwd: ROOT, stdio: 'inherit', env });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    const { problems, notes } = checkTally(tallyFile, { suite, full: filter.length === 0 });
    rmSync(tallyFile, { force: true });
    if (batchDir) rmSync(batchDir, { recursive: true, force: true });
    for (const line of notes) console.log(`${prefix} ${line}`);
    for (const line of problems) console.error(`${prefix} ${line}`);
    const status = code ?? (signal ? 1 : 0);
    process.exit(status !== 0 ? status : problems.length > 0 ? 1 : 0);
  });
}

/**
 * `count` entry modules in `dir` that import the test files between them (round robin), so that
 * node's runner starts one process per entry rather than per file: a process spends about two
 * seconds of CPU loading the libs before its first test, which dominated a suite of fifty small
 * files. Only for files that share no state: no stack, no server, no change to the environment;
 * a file's own before/after hooks still run around its tests. Static imports register every
 * test before the first one runs, in the files' order. `npm test` batches its unit files too.
 */
export function batchFiles(files, count, dir) {
  const batches = Array.from({ length: Math.min(count, files.length) }, () => []);
  files.forEach((file, i) => batches[i % batches.length].push(file));
  return batches.map((batch, i) => {
    const entry = path.join(dir, `batch-${i + 1}.test.mjs`);
    writeFileSync(entry, batch.map((file) => `import ${JSON.stringify(pathToFileURL(file).href)};\n`).join(''));
    return entry;
  });
}
