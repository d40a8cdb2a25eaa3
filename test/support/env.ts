/** Set by scripts/test.mjs, which starts a throwaway stack for the suite. */
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suite with npm test`);
  return value;
}

export const env = {
  apiUrl: required('TEST_API_URL'),
  apiKey: required('TEST_API_KEY'),
  /** A second api replica on the same database and Redis. */
  apiUrl2: required('TEST_API_URL_2'),
  /** A third api replica with tight file limits: drafts expire after 2 s (FILE_DRAFT_TTL_S=2), 1 MiB per owner (FILE_QUOTA_BYTES); it refuses private webhook targets (WEBHOOK_ALLOW_PRIVATE_NETWORKS=false). It also holds tight fair-share limits (FAIR_SHARE_LIMITS in scripts/test.mjs): call it with fresh users only. Idempotency keys sent to it are remembered for 7.2 s only (IDEMPOTENCY_TTL_HOURS=0.002). It has no usage clock route (USAGE_CLOCK_ADJUSTABLE=false). Each owner may have 3 automations firing at most once a minute (AUTOMATION_MAX_PER_OWNER, AUTOMATION_MIN_INTERVAL_S). It refuses new inputs of an owner whose sessions store 4 MiB or more, as the storage accounting measured them (STORAGE_QUOTA_BYTES=4194304, above what the other suites store there; the other replicas have no quota). */
  apiUrlFileLimits: required('TEST_API_URL_FILE_LIMITS'),
  /** A fourth api replica whose replay window is one stream node (EVENTS_REPLAY_MAXLEN=1) and 10 s (EVENTS_REPLAY_TTL_SECONDS=10): what it publishes trims a session's stream, and a stream it published last expires. */
  apiUrlShortWindow: required('TEST_API_URL_SHORT_WINDOW'),
  /** The stack's STORAGE_DIR (local file storage), for tests that look at or disturb stored bytes. */
  storageDir: required('TEST_STORAGE_DIR'),
  /** The HS256 secret the api verifies user tokens with (JWT_SECRET). */
  jwtSecret: required('TEST_JWT_SECRET'),
  databaseUrl: required('DATABASE_URL'),
  redisUrl: required('REDIS_URL'),
  /** Where the worker expects its OpenAI-compatible endpoint (OPENAI_BASE_URL): start test/support/fake-openai.ts there. */
  fakeOpenAiPort: Number(required('TEST_FAKE_OPENAI_PORT')),
  /** Where the worker expects its web_search provider (WEB_SEARCH_URL, a SearXNG): test/e2e/web-search.test.ts serves one there. */
  fakeSearchPort: Number(required('TEST_FAKE_SEARCH_PORT')),
  /** Where the stack exports its spans (OTEL_EXPORTER_OTLP_ENDPOINT, OTLP/HTTP: protobuf, JSON from api-2): start test/support/otlp-receiver.ts there. */
  otlpPort: Number(required('TEST_OTLP_PORT')),
  /** The worker's health port (WORKER_HEALTH_PORT), where it serves /health and /metrics. */
  workerHealthUrl: required('TEST_WORKER_HEALTH_URL'),
  /** Debian's chromium, which the console tests drive with playwright-core. */
  chromium: required('TEST_CHROMIUM'),
};
