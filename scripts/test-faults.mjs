// `npm run test:faults`: the fault suite of the durable core (test/faults). Builds, then runs
// dist/test/faults/*.test.js one file at a time. Unlike `npm test` there is no shared stack:
// each test file starts its own Postgres + Redis (test/faults/harness.ts) and each scenario its
// own api and worker processes, because the scenarios kill, stop and restart them.
//
//   npm run test:faults                 every scenario
//   npm run test:faults -- workers      only files whose name contains one of the words
//   FAULTS_ONLY=g npm run test:faults   only scenarios whose title contains the text (node --test-name-pattern)
//
// Process logs: .data/fault-logs/<scenario>/{api-N,worker-N}.log
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ensureBuilt, ROOT } from './lib/build.mjs';

await ensureBuilt();

const filter = process.argv.slice(2);
const testDir = path.join(ROOT, 'dist', 'test', 'faults');
const files = existsSync(testDir)
  ? readdirSync(testDir)
      .filter((file) => file.endsWith('.test.js') && (filter.length === 0 || filter.some((f) => file.includes(f))))
      .sort()
      .map((file) => path.join(testDir, file))
  : [];
if (files.length === 0) {
  console.error(`test:faults: no test files in ${testDir}${filter.length ? ` matching ${filter.join(', ')}` : ''}`);
  process.exit(1);
}

const args = ['--enable-source-maps', '--test', '--test-concurrency=1'];
if (process.env.FAULTS_ONLY) args.push(`--test-name-pattern=${process.env.FAULTS_ONLY}`);

// The fault harness owns its servers: it never uses an outside DATABASE_URL / REDIS_URL.
const env = { ...process.env };
delete env.DATABASE_URL;
delete env.REDIS_URL;

const child = spawn(process.execPath, [...args, ...files], { cwd: ROOT, stdio: 'inherit', env });
// Ctrl-C / a CI timeout reaches the test files, whose harness tears its processes down.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
const code = await new Promise((resolve) => child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
if (code !== 0) console.error('\ntest:faults failed; process logs are in .data/fault-logs/<scenario>/');
process.exit(code);
