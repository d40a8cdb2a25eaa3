// `npm run test:unit`: the unit tests (test/unit) alone: no Postgres, no Redis, no api or worker,
// no build of the apps. tsc compiles the libs, test/unit and test/support into dist/ (tsconfig.unit.json)
// in build mode, which skips the compiler altogether when no source is newer than the last
// build; then node's test runner runs the files. `npm test` still runs them too, against its stack.
//
//   npm run test:unit             every unit test file
//   npm run test:unit -- sdk      only files whose path contains one of the words (each must match one)
//
// A skipped or todo test fails the run; so does a full run with another number of tests than test/test-counts.json records.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBuilt, ROOT } from './lib/build.mjs';
import { checkTally, filterFiles, reporterArgs } from './lib/test-tally.mjs';

await ensureBuilt(console.log, { tscArgs: ['-b', 'tsconfig.unit.json'], buildInfo: 'dist/.tsbuildinfo-unit', prefix: '[test:unit]' });

const filter = process.argv.slice(2);
const testDir = path.join(ROOT, 'dist', 'test', 'unit');
const candidates = readdirSync(testDir, { recursive: true })
  .map(String)
  .filter((file) => file.endsWith('.test.js'))
  // A test deleted from test/unit leaves its compiled file in dist/: not run.
  .filter((file) => existsSync(path.join(ROOT, 'test', 'unit', file.replace(/\.js$/, '.ts'))));
// Each word must name a file: a misspelt one is an error, not a run of the rest (or of nothing).
const files = filterFiles(candidates, filter, 'test:unit').map((file) => path.join(testDir, file));
// Skipped and todo tests fail the run, and so does a full run with another number of tests than the last known (test/test-counts.json).
const tallyFile = path.join(os.tmpdir(), `yuxi-test-unit-tally-${process.pid}.json`);
rmSync(tallyFile, { force: true });

// No stack here, whatever the shell has: a test that needs Postgres or Redis belongs in test/e2e,
// and fails here rather than reaching a server the shell happens to name.
const env = { ...process.env };
delete env.DATABASE_URL;
delete env.REDIS_URL;

// Files run in parallel, one process each: as many at a time as there are cores, at least two.
const concurrency = Math.max(2, os.availableParallelism());
const child = spawn(process.execPath, ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, ...reporterArgs(tallyFile), ...files], { cwd: ROOT, stdio: 'inherit', env });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  const { problems, notes } = checkTally(tallyFile, { suite: 'test:unit', full: filter.length === 0 });
  rmSync(tallyFile, { force: true });
  for (const line of notes) console.log(`[test:unit] ${line}`);
  for (const line of problems) console.error(`[test:unit] ${line}`);
  const status = code ?? (signal ? 1 : 0);
  process.exit(status !== 0 ? status : problems.length > 0 ? 1 : 0);
});
