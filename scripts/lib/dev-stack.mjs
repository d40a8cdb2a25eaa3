// The stack of `npm start` (Postgres, Redis, migrations, api, worker), run by scripts/start.mjs in
// a process group of its own: a Ctrl-C in the terminal reaches the launcher only, which passes it
// on here, and the stack stops in order — api and worker first (their graceful close still has
// Postgres and Redis), then Redis and Postgres. Stops as well when the launcher goes away without
// a word (its IPC channel closes), so nothing is left running; should this process itself be
// killed outright, the orphan guard (scripts/lib/orphan-guard.mjs) stops what it started.
//
//   node scripts/lib/dev-stack.mjs [--data-dir DIR]    (default .data/dev; `npm start -- --data-dir
//                                                       DIR` passes it on)
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, seconds } from './build.mjs';
import { freePort } from './infra.mjs';
import { startStack } from './stack.mjs';

// The terminal may be gone by the time this stops (the launcher killed with its window): writing
// there must not end this process before the stack is stopped.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});

const starting = new AbortController();
let stack = null;
let stopping = false;

async function shutdown(reason) {
  if (stopping) return;
  stopping = true;
  const began = Date.now();
  if (!stack) {
    console.log(`\n[stack] ${reason}: stopping what has started…`);
    starting.abort(new Error(`stopped (${reason}) while starting`));
    return; // the start rejects, stops what it started, and the catch below exits
  }
  console.log(`\n[stack] ${reason}: stopping the api and the worker, then Redis and Postgres…`);
  try {
    await stack.stop();
    console.log(`[stack] stopped (${seconds(Date.now() - began)}).`);
    process.exit(0);
  } catch (error) {
    console.error('[stack] stopping failed:', error);
    process.exit(1);
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void shutdown(signal));
process.on('disconnect', () => void shutdown('the launcher exited'));

const { values: args } = parseArgs({ options: { 'data-dir': { type: 'string' } } });
const dataDir = path.resolve(args['data-dir'] ?? path.join(ROOT, '.data', 'dev'));
mkdirSync(dataDir, { recursive: true });
const keyFile = path.join(dataDir, 'bootstrap-api-key');
// A stable key across restarts unless the operator chose one. Any secret of 20+ characters is a
// valid bootstrap key; keys the API creates are `yuxi_…` with a checksum (libs/auth key-format).
const bootstrapKey =
  process.env.BOOTSTRAP_API_KEY ||
  (existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : `yx_dev_${randomBytes(24).toString('base64url')}`);
if (!process.env.BOOTSTRAP_API_KEY) writeFileSync(keyFile, bootstrapKey, { mode: 0o600 });

try {
  stack = await startStack({
    dataDir,
    port: Number(process.env.PORT || 3000),
    env: {
      BOOTSTRAP_API_KEY: bootstrapKey,
      WORKER_HEALTH_PORT: process.env.WORKER_HEALTH_PORT || String(await freePort()),
      // Human-readable logs on the console (the apps log JSON lines otherwise).
      LOG_FORMAT: process.env.LOG_FORMAT || 'pretty',
      // api and worker write to a pipe read here: coloured when this shows them on a terminal.
      LOG_COLOR: process.env.LOG_COLOR || (process.stdout.isTTY ? 'always' : 'never'),
    },
    // A crashed api or worker is started again (with back-off), the rest of the stack keeps running.
    restart: true,
    signal: starting.signal,
    orphanGuard: true,
  });
} catch (error) {
  if (starting.signal.aborted) {
    console.log('[stack] stopped.');
    process.exit(0);
  }
  console.error('[stack] the stack did not start:', error);
  process.exit(1);
}

/** `api 12, worker 13, redis 10, postgres 11`: what runs now (a restart changes a pid). */
function pids() {
  const all = [...stack.children.map((child) => [child.name, child.pid]), ['redis', stack.infra.redis?.pid], ['postgres', stack.infra.postgres?.pid]];
  return all.filter(([, pid]) => pid).map(([name, pid]) => `${name} ${pid}`).join(', ');
}

const launchedAt = Number(process.env.STACK_LAUNCHED_AT) || undefined;
console.log(`
  Agents Sessions API is ready${launchedAt ? ` (${seconds(Date.now() - launchedAt)} after npm start)` : ''}.
    API      ${stack.url}/api/v1/agents
    SDK      baseURL ${stack.url}/api/v1 for the official openai SDK (AGENTS_URL=${stack.url} for ours)
    Docs     ${stack.url}/docs   (OpenAPI: ${stack.url}/openapi.json)
    Console  ${stack.url}/console
    API key  ${bootstrapKey}

    Postgres ${stack.env.DATABASE_URL}${stack.infra.postgres ? '' : '   (DATABASE_URL)'}
    Redis    ${stack.env.REDIS_URL}${stack.infra.redis ? '' : '   (REDIS_URL)'}
    Pids     ${pids()}

  Try:  curl -H "Authorization: Bearer ${bootstrapKey}" ${stack.url}/api/v1/agents
  A crashed api or worker is restarted; Ctrl-C stops api, worker, Redis and Postgres.
`);
