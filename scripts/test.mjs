// `npm test`: builds, starts a throwaway stack (embedded Postgres, local Redis, api and worker
// processes, exactly as `npm start` does) and runs the whole suite against it with node's test runner.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, ensureConsoleBuilt, ROOT } from './lib/build.mjs';
import { batchFiles } from './lib/test-folder.mjs';
import { checkTally, filterFiles, reporterArgs } from './lib/test-tally.mjs';

await ensureBuilt();
await ensureConsoleBuilt();

// Which files run, decided before any server starts: a filter that names no file stops here.
const filter = process.argv.slice(2);
const testDir = path.join(ROOT, 'dist', 'test');
const candidates = readdirSync(testDir, { recursive: true })
  .map(String)
  // Every folder of test/ but faults: e2e, budget, and the unit and component tests (which
  // `npm run test:unit` and `npm run test:components` also run without a stack).
  // dist/test/faults is the fault suite (`npm run test:faults`): it starts its own stacks.
  .filter((file) => !file.startsWith(`faults${path.sep}`))
  .filter((file) => file.endsWith('.test.js'))
  // A test deleted from test/ leaves its compiled file in dist/: not run.
  .filter((file) => existsSync(path.join(ROOT, 'test', file.replace(/\.js$/, '.ts'))));
// Each word must name a file: a misspelt one is an error, not a run of the rest (or of nothing).
const selected = filterFiles(candidates, filter, 'npm test');
// The unit files run in one process between them, as `npm run test:unit` runs them
// (scripts/lib/test-folder.mjs, batchFiles): they share no state, and a process of their own each
// spent about two seconds loading the libs (148 s for 92 files on 2 cores; the tests themselves
// take 6 s). The other folders keep a process per file. (node's runner orders the files by path,
// the batch's entry module in the temp folder among them: the unit tests need nothing of the stack.)
const isUnit = (file) => file.startsWith(`unit${path.sep}`);
const unitFiles = selected.filter(isUnit).map((file) => path.join(testDir, file));
const batchDir = unitFiles.length > 0 ? mkdtempSync(path.join(os.tmpdir(), 'yuxi-test-unit-')) : null;
const files = [...selected.filter((file) => !isUnit(file)).map((file) => path.join(testDir, file)), ...(batchDir ? batchFiles(unitFiles, 1, batchDir) : [])];
// The run's tally (test/test-counts.json, scripts/lib/test-tally.mjs): skipped and todo tests fail it, and so does a full run with another number of tests than the last known.
const tallyFile = path.join(os.tmpdir(), `yuxi-test-tally-${process.pid}.json`);
rmSync(tallyFile, { force: true });
const { startStack } = await import('./lib/stack.mjs');

const logDir = path.join(ROOT, '.data', 'test-logs');
const { ensureChromium, freePort } = await import('./lib/infra.mjs');
// The console's browser tests drive Debian's chromium (installed here when missing, as redis-server is).
const chromium = ensureChromium();
// The worker's OpenAI-compatible endpoint: a fake server that the e2e files needing it start on this port (test/support/fake-openai.ts).
const fakeOpenAiPort = await freePort();
// The web_search provider: a fake SearXNG that test/e2e/web-search.test.ts starts on this port.
const fakeSearchPort = await freePort();
// The worker's health port serves /metrics, which the metrics test scrapes.
const workerHealthPort = await freePort();
// Where the stack exports its spans (OTLP/HTTP): test/e2e/traces.test.ts starts an in-process
// receiver on this port (test/support/otlp-receiver.ts); while none listens, exports fail quietly.
const otlpPort = await freePort();
const jwtSecret = randomBytes(32).toString('base64url');
const apiKey = `yx_test_${randomBytes(24).toString('base64url')}`;
const stack = await startStack({
  dataDir: path.join(os.tmpdir(), `yuxi-test-${process.pid}`),
  ephemeral: true,
  logDir,
  env: {
    BOOTSTRAP_API_KEY: apiKey,
    WORKER_HEALTH_PORT: String(workerHealthPort),
    // JSON lines in the log files, whatever the shell says (test/e2e/logs.test.ts reads them).
    LOG_FORMAT: 'json',
    LOG_LEVEL: ['debug', 'trace'].includes(process.env.LOG_LEVEL ?? '') ? process.env.LOG_LEVEL : 'info',
    // Short intervals so recovery and heartbeats are observable within a test's time.
    SSE_HEARTBEAT_MS: '1000',
    RECOVERY_SWEEP_MS: '500',
    RECOVERY_GRACE_MS: '1000',
    // A session stays with the worker that drove it longer than a loaded machine's gap between
    // one turn's end and a test's next input (test/e2e/sticky-workers.test.ts counts the jobs).
    WORKER_LINGER_MS: '10000',
    // Room for a 5 MB inline image (about 6.7 MB as base64); the 413 tests send more than this.
    BODY_LIMIT: '12mb',
    // Expired drafts are swept within a test's time (the short-TTL replica below makes some).
    FILE_SWEEP_MS: '500',
    // Webhook retries and timeouts a test can wait for (the schedule's shape is unit-tested), and a
    // sweep that finds lost jobs within a test's time.
    WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_SWEEP_MS: '1000',
    AUTOMATION_SWEEP_MS: '1000',
    OPENAI_BASE_URL: `http://127.0.0.1:${fakeOpenAiPort}/v1`,
    OPENAI_API_KEY: 'sk-test-fake',
    // Backoff stays short: retry tests wait for a real Retry-After, not for our jitter.
    MODEL_RETRY_MAX_DELAY_MS: '3000',
    AGENTS_FILE: path.join(ROOT, 'test', 'fixtures', 'agents.yaml'),
    // The suite shares one key: its limit is out of the way; rate-limit tests use keys with their own.
    RATE_LIMIT_PER_MINUTE: '1000000',
    END_USER_RATE_LIMIT_PER_MINUTE: '1000000',
    // Likewise its stream slots, counted in Redis across replicas and files: a slot whose release
    // was lost (Redis paused by a metrics test) would otherwise be held for minutes. Cap tests
    // use keys with their own max_streams.
    MAX_STREAMS_PER_PRINCIPAL: '1000',
    // Fair shares: out of the way for the suite's shared key and address; the
    // file-limits replica below holds tight ones, which test/e2e/fair-shares.test.ts drives.
    USER_RATE_LIMIT_PER_MINUTE: '1000000',
    APP_RATE_LIMIT_PER_MINUTE: '1000000',
    MAX_STREAMS_PER_ACCOUNT: '1000',
    MAX_KEYS_PER_USER: '100000',
    NEW_END_USERS_PER_MINUTE: '1000000',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '1000000',
    // Cooperation caps the worker holds (one worker for the suite): no test tree needs more than
    // five members from one turn; test/e2e/cooperation.test.ts drives both caps past these.
    MAX_SUBAGENT_CREATES_PER_TURN: '5',
    MAX_SUBAGENTS_PER_TREE: '6',
    // Running turns per owner across the fleet: test/e2e/owner-turn-cap.test.ts drives a
    // fresh user past it; no other file runs more than a few slow turns of one user at once.
    MAX_ACTIVE_TURNS_PER_OWNER: '6',
    // The exact model requests are recorded, so the suite reads them (test/e2e/model-requests.test.ts);
    // only this stack's processes get it (the bench sets it off for its own).
    MODEL_REQUEST_AUDIT: 'on',
    // Small enough that a few test images reach it (model-images e2e).
    MODEL_REQUEST_IMAGE_BYTES: '1048576',
    JWT_SECRET: jwtSecret,
    JWT_ISSUER: 'https://issuer.test',
    JWT_AUDIENCE: 'yuxi-tests',
    // MCP as a deployment has it: private addresses refused, except the loopback hosts of the
    // suite's own MCP servers for agents an administrator owns (a user's private agent is refused).
    MCP_ALLOW_PRIVATE_NETWORKS: 'false',
    MCP_ALLOWED_HOSTS: '127.0.0.1,localhost',
    // web_search against the suite's fake SearXNG, through the outbound policy as a deployment has
    // it: private addresses refused but for this one host; a timeout a test can outwait.
    WEB_SEARCH_PROVIDER: 'searxng',
    WEB_SEARCH_URL: `http://127.0.0.1:${fakeSearchPort}`,
    WEB_SEARCH_ALLOWED_HOSTS: `127.0.0.1:${fakeSearchPort}`,
    WEB_SEARCH_TIMEOUT_MS: '1500',
    WEB_SEARCH_MAX_RESULTS: '3',
    // Budget day and month roll-overs are tested by moving the usage clock (the file-limits replica
    // below keeps the deployment's default: no such route).
    USAGE_CLOCK_ADJUSTABLE: 'true',
    // Session TTLs and retention are tested by moving the lifecycle clock; the retention sweep runs
    // every second so a test waits for a purge briefly.
    LIFECYCLE_CLOCK_ADJUSTABLE: 'true',
    RETENTION_SWEEP_MS: '1000',
    // The automations tests fire schedules every 1-2 s (the file-limits replica keeps a minute).
    AUTOMATION_MIN_INTERVAL_S: '1',
    // The console links a turn's trace to a trace UI (test/e2e/console-traces.test.ts reads the link; nothing serves it).
    TRACE_URL_TEMPLATE: 'https://traces.example.test/trace/{trace_id}?from=console',
    // Traces (test/e2e/traces.test.ts): on, kept per session and exported over OTLP/HTTP protobuf
    // (the second replica below exports JSON, so both encodings are exercised), in batches sent
    // every 200 ms so a test waits for spans briefly. The budget stack keeps tracing off.
    TRACING: 'on',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  },
});
// A second api replica on the same database and Redis: what must hold across replicas (revocation, rate limits) is tested against both.
const { launch, waitForHealth, SCRIPTS } = await import('./lib/stack.mjs');
const secondApiPort = await freePort();
// It exports its spans as OTLP/JSON, under a service name of its own (test/e2e/traces.test.ts).
const secondApi = launch('api-2', SCRIPTS.api, { ...stack.env, PORT: String(secondApiPort), OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'yuxi-api-2' }, logDir);
stack.children.push(secondApi);
await waitForHealth(`http://127.0.0.1:${secondApiPort}/health`, [secondApi], 60_000);
// A third replica with tight file limits (and no web_search provider, as a deployment that configures none): its drafts expire after 2 s (expiry is observed for
// real, never faked in SQL) and each owner may store 1 MiB, each session 512 KiB of images. It also refuses private webhook
// targets, as a deployment does (the others allow the suite's local receivers).
// And tight fair-share limits (test/e2e/fair-shares.test.ts, with fresh users only): the limits
// are counted per limit value, so the suite's traffic on the other replicas is not in its counts.
const FAIR_SHARE_LIMITS = {
  USER_RATE_LIMIT_PER_MINUTE: '30',
  APP_RATE_LIMIT_PER_MINUTE: '20',
  MAX_STREAMS_PER_ACCOUNT: '3',
  MAX_KEYS_PER_USER: '3',
  NEW_END_USERS_PER_MINUTE: '4',
  AUTH_FAILURE_LIMIT_PER_MINUTE: '10',
  // Its clients' addresses come from X-Forwarded-For set by a proxy on loopback (the suite itself).
  TRUST_PROXY: 'loopback',
  // Automations (test/e2e/automations-api.test.ts): three per owner, and no schedule firing more often than once a minute.
  AUTOMATION_MAX_PER_OWNER: '3',
  AUTOMATION_MIN_INTERVAL_S: '60',
};
const fileLimitsApiPort = await freePort();
// It remembers idempotency keys for 7.2 s (IDEMPOTENCY_TTL_HOURS=0.002; test/e2e/idempotency-expiry.test.ts) and has no
// web search provider (test/e2e/web-search.test.ts), no sandbox runtime (test/e2e/session-environments.test.ts) and no usage clock route (test/e2e/budgets.test.ts).
// It holds each owner to 4 MiB of stored sessions (STORAGE_QUOTA_BYTES=4194304; test/e2e/storage-totals.test.ts): above what the other suites on it store (files there are held to 1 MiB an account), so only that suite meets it.
const fileLimitsApi = launch('api-file-limits', SCRIPTS.api, { ...stack.env, PORT: String(fileLimitsApiPort), FILE_DRAFT_TTL_S: '2', FILE_QUOTA_BYTES: '1048576', SESSION_IMAGE_BYTES: '524288', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', IDEMPOTENCY_TTL_HOURS: '0.002', WEB_SEARCH_PROVIDER: '', SANDBOX_RUNTIME: 'none', USAGE_CLOCK_ADJUSTABLE: 'false', LIFECYCLE_CLOCK_ADJUSTABLE: 'false', STORAGE_QUOTA_BYTES: '4194304', ...FAIR_SHARE_LIMITS }, logDir);
stack.children.push(fileLimitsApi);
await waitForHealth(`http://127.0.0.1:${fileLimitsApiPort}/health`, [fileLimitsApi], 60_000);
// A fourth replica whose replay window is one stream node (EVENTS_REPLAY_MAXLEN=1) and 10 s
// (EVENTS_REPLAY_TTL_SECONDS): an event it publishes trims the session's stream as MAXLEN does
// under load, and a stream it published last expires, so the window moves for real
// (test/support/replay-window.ts, test/e2e/sse.test.ts).
const shortWindowApiPort = await freePort();
const shortWindowApi = launch('api-short-window', SCRIPTS.api, { ...stack.env, PORT: String(shortWindowApiPort), EVENTS_REPLAY_MAXLEN: '1', EVENTS_REPLAY_TTL_SECONDS: '10' }, logDir);
stack.children.push(shortWindowApi);
await waitForHealth(`http://127.0.0.1:${shortWindowApiPort}/health`, [shortWindowApi], 60_000);

/** Every api replica started above: the status audit scrapes each. */
const apiUrls = [stack.url, `http://127.0.0.1:${secondApiPort}`, `http://127.0.0.1:${fileLimitsApiPort}`, `http://127.0.0.1:${shortWindowApiPort}`];

let child;
// A terminated run (CI timeout, Ctrl-C) must not leave api, worker, Postgres or Redis behind.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    child?.kill(signal);
    if (batchDir) rmSync(batchDir, { recursive: true, force: true });
    void stack.stop().then(() => process.exit(130));
  });
}

const code = await new Promise((resolve) => {
  child = spawn(process.execPath, ['--enable-source-maps', '--test', '--test-concurrency=1', ...reporterArgs(tallyFile), ...files], {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      ...stack.env,
      TEST_API_URL: apiUrls[0],
      TEST_API_URL_2: apiUrls[1],
      TEST_API_URL_FILE_LIMITS: apiUrls[2],
      TEST_API_URL_SHORT_WINDOW: apiUrls[3],
      TEST_STORAGE_DIR: stack.env.STORAGE_DIR,
      TEST_API_KEY: apiKey,
      TEST_FAKE_OPENAI_PORT: String(fakeOpenAiPort),
      TEST_FAKE_SEARCH_PORT: String(fakeSearchPort),
      TEST_OTLP_PORT: String(otlpPort),
      TEST_WORKER_HEALTH_URL: `http://127.0.0.1:${workerHealthPort}`,
      TEST_JWT_SECRET: jwtSecret,
      TEST_LOG_DIR: logDir,
      TEST_CHROMIUM: chromium,
    },
  });
  child.on('exit', (exitCode) => resolve(exitCode ?? 1));
});

// Before the stack stops: what the replicas answered is in their counters, every replica's (the
// file-limits one answers statuses the others never do: quota 413s, expired drafts' 404s).
const audited = await auditStatuses(apiUrls);
await stack.stop();
const { problems: tallyProblems, notes } = checkTally(tallyFile, { suite: 'test', full: filter.length === 0 });
rmSync(tallyFile, { force: true });
if (batchDir) rmSync(batchDir, { recursive: true, force: true });
for (const line of notes) console.log(`[test] ${line}`);
for (const line of tallyProblems) console.error(`[test] ${line}`);
if (code !== 0) {
  for (const name of ['api', 'worker']) {
    const file = path.join(logDir, `${name}.log`);
    if (!existsSync(file)) continue;
    const lines = readFileSync(file, 'utf8').split('\n');
    console.error(`\n----- last lines of ${name}.log -----\n${lines.slice(-40).join('\n')}`);
  }
}
process.exit(code !== 0 ? code : audited && tallyProblems.length === 0 ? 0 : 1);

/**
 * Every (method, route, status) the api replicas answered while the tests ran, read from their
 * /metrics, must be declared for its operation in /openapi.json (test/support/status-audit.ts).
 */
async function auditStatuses(urls) {
  try {
    const audit = await import(pathToFileURL(path.join(ROOT, 'dist', 'test', 'support', 'status-audit.js')).href);
    const document = await (await fetch(`${urls[0]}/openapi.json`)).json();
    const scrapes = await Promise.all(urls.map(async (url) => audit.statusSamples(await (await fetch(`${url}/metrics`)).text())));
    const samples = audit.mergeSamples(...scrapes);
    const findings = audit.undeclaredStatuses(document, samples);
    if (findings.length === 0) {
      console.log(`[test] status audit: ${samples.length} (method, route, status) seen, each declared in /openapi.json`);
      return true;
    }
    console.error(`\n[test] status audit: statuses answered during the run that /openapi.json does not declare:\n${audit.formatFindings(findings)}`);
  } catch (error) {
    console.error(`\n[test] status audit failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  return false;
}
