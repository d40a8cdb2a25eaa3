// `npm run test:faults`: the fault suite of the durable core (test/faults). Builds, then runs
// dist/test/faults/*.test.js two files at a time (each file its own stack, so they share nothing;
// their scenarios spend most of their time waiting on leases, restarts and sweeps, which two files
// overlap: the suite takes about 4 minutes instead of 7 on 2 cores). Unlike `npm test` there is no shared stack:
// each test file starts its own Postgres + Redis (test/faults/harness.ts) and each scenario its
// own api and worker processes, because the scenarios kill, stop and restart them.
//
//   npm run test:faults                 every scenario
//   npm run test:faults -- workers      only files whose name contains one of the words (each word
//                                       must match a file)
//   FAULTS_ONLY=g npm run test:faults   only scenarios whose title contains the text (node --test-name-pattern)
//
// A skipped or todo scenario fails the run; so does a full run (no word, no FAULTS_ONLY) with another
// number of tests than test/test-counts.json records.
//
// Process logs: .data/fault-logs/<scenario>/{api-N,worker-N}.log
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, ROOT } from './lib/build.mjs';
import { checkTally, filterFiles, reporterArgs } from './lib/test-tally.mjs';

await ensureBuilt();

const filter = process.argv.slice(2);
const testDir = path.join(ROOT, 'dist', 'test', 'faults');
const candidates = existsSync(testDir)
  ? readdirSync(testDir)
      .filter((file) => file.endsWith('.test.js'))
      // A test deleted from test/faults leaves its compiled file in dist/: not run.
      .filter((file) => existsSync(path.join(ROOT, 'test', 'faults', file.replace(/\.js$/, '.ts'))))
  : [];
// Each word must name a file: a misspelt one is an error, not a run of the rest (or of nothing).
const selected = filterFiles(candidates, filter, 'test:faults');
// The longest files start first, so that no long file starts late and runs alone at the end: in
// name order workers.test.js (70 s) started last, and the suite took 274 s of wall time for 489 s
// of scenarios. By the seconds of that CI run on 2 cores (outages 71, workers 70, launcher 42,
// agent-runtime 41, races 39, automations 38, operations 34, cooperation 29, webhooks 28, usage
// 26); a file not listed (each under 20 s) goes after these, in name order. node's runner sorts
// the files it is given by path, so each runs through an entry module whose name carries its
// place ("03-launcher.test.mjs" imports dist/test/faults/launcher.test.js): still one process per
// file, as before.
const LONGEST_FIRST = ['outages', 'workers', 'launcher', 'agent-runtime', 'races', 'automations', 'operations', 'cooperation', 'webhooks', 'usage'];
const rank = (file) => {
  const i = LONGEST_FIRST.indexOf(file.replace(/\.test\.js$/, ''));
  return i === -1 ? LONGEST_FIRST.length : i;
};
const ordered = [...selected].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
const entryDir = mkdtempSync(path.join(os.tmpdir(), 'yuxi-test-faults-'));
const files = ordered.map((file, i) => {
  const entry = path.join(entryDir, `${String(i + 1).padStart(2, '0')}-${file.replace(/\.js$/, '.mjs')}`);
  writeFileSync(entry, `import ${JSON.stringify(pathToFileURL(path.join(testDir, file)).href)};\n`);
  return entry;
});
// Skipped and todo tests fail the run, and so does a full run with another number of tests than the last known (test/test-counts.json).
const tallyFile = path.join(os.tmpdir(), `yuxi-test-faults-tally-${process.pid}.json`);
rmSync(tallyFile, { force: true });

const args = ['--enable-source-maps', '--test', '--test-concurrency=2', ...reporterArgs(tallyFile)];
const namePattern = Boolean(process.env.FAULTS_ONLY);
if (namePattern) args.push(`--test-name-pattern=${process.env.FAULTS_ONLY}`);

// The fault harness owns its servers: it never uses an outside DATABASE_URL / REDIS_URL.
const env = { ...process.env };
delete env.DATABASE_URL;
delete env.REDIS_URL;

const child = spawn(process.execPath, [...args, ...files], { cwd: ROOT, stdio: 'inherit', env });
// Ctrl-C / a CI timeout reaches the test files, whose harness tears its processes down.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
const code = await new Promise((resolve) => child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
if (code !== 0) console.error('\ntest:faults failed; process logs are in .data/fault-logs/<scenario>/');
// Only a run of every file and every scenario is held to the count.
const { problems, notes } = checkTally(tallyFile, { suite: 'test:faults', full: filter.length === 0 && !namePattern, namePattern });
rmSync(tallyFile, { force: true });
rmSync(entryDir, { recursive: true, force: true });
for (const line of notes) console.log(`[test:faults] ${line}`);
for (const line of problems) console.error(`[test:faults] ${line}`);
process.exit(code !== 0 ? code : problems.length > 0 ? 1 : 0);
