import { parseAllowedHosts } from '#libs/outbound';
import { bool, int, modelAllowlist, oneOf, parseTrustProxy, positiveNumber, required } from './env-values.js';
import { sandboxSettings, type SandboxSettings } from './sandbox-settings.js';
import { redisClusterSettings, type RedisClusterSettings, storageSettings, type StorageSettings, webSearchSettings, type WebSearchSettings } from './service-settings.js';

// The parsers and the services' settings are in env-values.ts and service-settings.ts; the lib's
// entry point exports them from here as before.
export { parseRedisNodes, type RedisNode } from './env-values.js';
export { SANDBOX_RUNTIMES, type SandboxLimitValues, type SandboxRuntimeName, type SandboxSettings } from './sandbox-settings.js';
export { MAX_STREAM_SHARDS, type RedisClusterSettings, type StorageSettings, WEB_SEARCH_PROVIDERS, type WebSearchProviderName, type WebSearchSettings } from './service-settings.js';

/**
 * Every setting the api and the worker read, parsed once from the environment.
 * The README's configuration table documents each variable; keep the two in step.
 */
export class AppConfig {
  readonly port: number;
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /**
   * REDIS_CLUSTER_NODES set: every connection is a Redis Cluster client seeded with these nodes
   * (REDIS_URL gives credentials and TLS). Null: REDIS_URL is one server, as before.
   */
  readonly redisCluster: RedisClusterSettings | null;
  readonly defaultModel: string;
  readonly bootstrapApiKey: string | undefined;
  readonly bodyLimit: string;
  /** Request bodies over 1 MiB one product user may have in flight at once on one api (0: no limit). */
  readonly maxConcurrentLargeBodies: number;
  /** Bytes (UTF-8) of text per message and per submission, far below bodyLimit (which is for images). */
  readonly maxInputTextBytes: number;
  readonly eventsReplayMaxLen: number;
  readonly eventsReplayTtlSeconds: number;
  readonly sseHeartbeatMs: number;
  /**
   * Bytes an SSE stream may have waiting in its socket's user-space buffer (the kernel's buffers
   * are full: the client reads slower than events come) before the stream is cut with a `retry:`
   * hint; the client resumes from its Last-Event-ID, so a slow reader costs a reconnect, never
   * unbounded memory.
   */
  readonly sseMaxBufferedBytes: number;
  /** UTF-8 bytes of an item's content an event carries at most (outbox and SSE); past it the event says `yuxi.truncated`. */
  readonly eventItemContentBytes: number;
  readonly runLeaseMs: number;
  readonly runHeartbeatMs: number;
  readonly recoverySweepMs: number;
  readonly recoveryGraceMs: number;
  readonly runMaxTakeovers: number;
  readonly outboxRelayMs: number;
  readonly idempotencyTtlHours: number;
  readonly workerConcurrency: number;
  /** How long a session stays with the worker that drove it last (wake-ups by pub/sub instead of a job); 0: off. */
  readonly workerLingerMs: number;
  readonly workerHealthPort: number;
  /** How often a worker announces itself in Redis; the announcement lives three times as long. */
  readonly workerHeartbeatMs: number;
  readonly dbPoolSize: number;
  readonly dbQueryTimeoutMs: number;
  readonly openaiBaseUrl: string;
  readonly openaiApiKey: string;
  readonly modelTimeoutMs: number;
  readonly modelMaxRetries: number;
  readonly modelRetryMaxDelayMs: number;
  readonly toolTimeoutMs: number;
  /** An MCP session unused this long is ended (DELETE) and forgotten by the worker. */
  readonly mcpSessionIdleMs: number;
  /** Open MCP sessions one worker keeps at most (all servers together); the least recently used idle one goes first. */
  readonly mcpMaxSessions: number;
  /** How long an MCP call that asked the user something (elicitation) waits for the answer before the worker tells the server `cancel`. */
  readonly mcpElicitationTimeoutMs: number;
  /** MCP servers (and their OAuth endpoints) may be private, loopback or link-local addresses (dev). */
  readonly mcpAllowPrivateNetworks: boolean;
  /** host or host:port entries that skip the private-address refusal, for agents administrators own only (public agents). */
  readonly mcpAllowedHosts: string[];
  /** Bytes one response of an MCP server (or of the OAuth endpoints it names) may carry; past it the call fails. */
  readonly mcpMaxResponseBytes: number;
  /** The most tokens one MCP sampling completion may have, whatever the server asks (the answer is cut there). */
  readonly mcpSamplingMaxTokens: number;
  /** The `web_search` builtin's provider (WEB_SEARCH_*); null: no provider, the tool is neither offered nor accepted in a definition. */
  readonly webSearch: WebSearchSettings | null;
  /** Sessions' environments (SANDBOX_*): the runtime commands run in, its limits, where workspaces are checked out. */
  readonly sandbox: SandboxSettings;
  readonly agentsFile: string | undefined;
  /** Model prices set at start-up (JSON or YAML map of provider:model to prices), by the api; unset: none. */
  readonly modelPricesFile: string | undefined;
  /** Required where keys are verified (the api); the worker does not read it. */
  readonly apiKeyHashSecret: string | undefined;
  readonly jwtSecret: string | undefined;
  readonly jwtJwksUrl: string | undefined;
  readonly jwtIssuer: string | undefined;
  readonly jwtAudience: string | undefined;
  readonly rateLimitPerMinute: number;
  readonly endUserRateLimitPerMinute: number;
  readonly maxStreamsPerPrincipal: number;
  /** Fair shares: requests per minute of all of a product user's keys and tokens together, and of one app's keys together. */
  readonly userRateLimitPerMinute: number;
  readonly appRateLimitPerMinute: number;
  /** Concurrent SSE streams of one product user, all their keys, tokens and app end users together. */
  readonly maxStreamsPerAccount: number;
  /** Live (unrevoked, unexpired) API keys one product user may hold. */
  readonly maxKeysPerUser: number;
  /** New app end users one app (of one product user) may bring into being per minute. */
  readonly newEndUsersPerMinute: number;
  /** Failed authentications per minute from one client address before further bad credentials are answered 429. */
  readonly authFailureLimitPerMinute: number;
  /**
   * Express's `trust proxy`: which proxies in front of the api may name the client's address in
   * X-Forwarded-For (a hop count, or their addresses and subnets). False: the socket's peer is the
   * client. What the failed-authentication throttle and the request log take as the client.
   */
  readonly trustProxy: false | number | string[];
  /** Unknown API keys remembered (at most this many, each for AUTH_CACHE_TTL_MS) so a repeated bad key costs no query. */
  readonly authNegativeCacheMax: number;
  /** Turns of one product user (its keys, tokens and app end users together) running at once across the fleet; more wait queued. 0: no cap. */
  readonly maxActiveTurnsPerOwner: number;
  /** Members one cooperation tree may hold (its root not counted), and members one coordinator turn may create; 0: no cap. */
  readonly maxSubagentsPerTree: number;
  readonly maxSubagentCreatesPerTurn: number;
  /** Share of a request limit (per cent) each api replica leases from Redis at a time; 0: one point per request. */
  readonly rateLimitLeasePercent: number;
  /** How long a verified API key is trusted without reading Postgres again (the bound on a lost invalidation); 0: never cached. */
  readonly authCacheTtlMs: number;
  /** How long a revocation or role change waits for every api replica to confirm it dropped the credential before answering. */
  readonly authInvalidationWaitMs: number;
  readonly scriptedModelsEnabled: boolean;
  /** MODEL_ALLOWLIST: the only models (`provider:model`, or `provider:*`) agents and overrides may name; null: every model of a known provider. */
  readonly modelAllowlist: readonly string[] | null;
  readonly scriptedMaxDelayMs: number;
  readonly scriptedMaxWords: number;
  /** Where file bytes live: this directory (`local`), or an S3-compatible bucket (`s3`). */
  readonly storage: StorageSettings;
  /** Seconds an uploaded draft may wait to be attached before the sweep deletes it. */
  readonly fileDraftTtlS: number;
  /** How often a worker sweeps expired drafts and unfinished deletions. */
  readonly fileSweepMs: number;
  /** Per owner: bytes of all stored files (drafts and attachments), and drafts waiting at once. */
  readonly fileQuotaBytes: number;
  /** One image's OCR (ocr_parse_file, the parse route): past it the engine's thread is terminated. */
  readonly ocrTimeoutMs: number;
  /** Parse and thumbnail requests (the product's file routes) one caller may have running at once, per api process. */
  readonly fileWorkPerPrincipal: number;
  readonly fileQuotaDrafts: number;
  /** Bytes of inline and tool images one session may store (they also count against fileQuotaBytes). */
  readonly sessionImageBytes: number;
  /** The image bytes (decoded) one model request carries at most; older images past it are left out with a note. */
  readonly modelRequestImageBytes: number;
  /**
   * MODEL_REQUEST_AUDIT=on: the worker records the exact request of each model call (the body it
   * sends, never headers or keys) with the call's step, for administrators with a user token;
   * `off` (the default) records nothing and costs nothing. The api reads it to say so on timelines.
   */
  readonly modelRequestAudit: boolean;
  /**
   * The key named secrets (MCP credentials) are encrypted under, on the api (which writes them)
   * and the worker (which reads them at call time). Unset: the deployment stores no secrets.
   */
  readonly secretsKey: string | undefined;
  /** ALLOW_UNSEALED_SECRETS=true: a production process (NODE_ENV=production) starts without SECRETS_KEY, storing webhook secrets unsealed. */
  readonly allowUnsealedSecrets: boolean;
  /** Longest lifetime (seconds) of an API key minted with a user token: its `expires_at` is brought within it. */
  readonly userTokenKeyMaxTtlS: number;
  /** Webhooks (libs/webhooks): private, loopback and link-local targets allowed (dev, tests), and plain http. */
  readonly webhookAllowPrivateNetworks: boolean;
  /** The delays between a webhook delivery's attempts, as WEBHOOK_RETRY_SCHEDULE says (libs/webhooks parses it; empty: the default). */
  readonly webhookRetrySchedule: string;
  /** How long one attempt may take, connect to last byte of the response head. */
  readonly webhookTimeoutMs: number;
  /** An endpoint whose deliveries have failed this long, without a success in between, is disabled. */
  readonly webhookDisableAfterS: number;
  /** How often each worker looks for due deliveries that no job announces (after a Redis loss, a crash). */
  readonly webhookSweepMs: number;
  /** Attempts in flight at once per worker: they wait on the network, not the CPU. */
  readonly webhookConcurrency: number;
  /** Finished deliveries (and their attempt log) are deleted after this long. */
  readonly webhookRetentionS: number;
  /** USAGE_CLOCK_ADJUSTABLE=true: administrators may move the clock of usage periods (`PUT /api/v1/admin/usage-clock`, for tests of day and month roll-overs); else that route is not found. */
  readonly usageClockAdjustable: boolean;
  /** FORK_MAX_DEPTH: the most ancestors a fork's history may reach through (every history read of a fork costs one index probe per ancestor). */
  readonly forkMaxDepth: number;
  /** TRACE_RETENTION_S: spans kept per session (GET /sessions/{id}/traces, while tracing is on) are deleted this long after they were written. */
  readonly traceRetentionS: number;
  /** TRACE_URL_TEMPLATE: a trace UI's address with `{trace_id}` in it (Jaeger, Tempo, Langfuse); the console links each turn's trace there. Empty: no link. */
  readonly traceUrlTemplate: string;
  /** AUTOMATION_SWEEP_MS: how often a worker fires the automations whose time passed with no timer (Redis lost it, no worker was up). */
  readonly automationSweepMs: number;
  /** AUTOMATION_INVOCATIONS_KEPT: the most invocation records kept per automation; the automations sweep deletes older ones, a few at a time. */
  readonly automationInvocationsKept: number;
  /** AUTOMATION_MISFIRE_GRACE_S: a lone scheduled time fired later than this is a missed one (catch_up decides). */
  readonly automationMisfireGraceS: number;
  /** AUTOMATION_CATCH_UP_MAX: the most missed times `catch_up: all` fires at once (older ones are recorded as skipped). */
  readonly automationCatchUpMax: number;
  /** AUTOMATION_MAX_PER_OWNER: the most automations (any status) one account may have (an app's end users together). */
  readonly automationMaxPerOwner: number;
  /** AUTOMATION_MIN_INTERVAL_S: the shortest time between two fires a periodic expression may have. */
  readonly automationMinIntervalS: number;
  /** RETENTION_SWEEP_MS: how often a worker runs the retention tasks (purges of deleted sessions, model requests, cooperation signals, audit; session TTLs). */
  readonly retentionSweepMs: number;
  /** RETENTION_BATCH_ROWS: the most rows one purge statement removes (short transactions, no long locks, vacuum keeps up). */
  readonly retentionBatchRows: number;
  /** SESSION_PURGE_AFTER_S: a deleted session's rows and blobs are purged this long after its deletion (the grace period; the lifecycle clock). */
  readonly sessionPurgeAfterS: number;
  /** MODEL_REQUEST_RETENTION_S: recorded model requests (MODEL_REQUEST_AUDIT) are deleted this long after they were written. */
  readonly modelRequestRetentionS: number;
  /** COOPERATION_SIGNAL_RETENTION_S: the signals of a cooperation tree with nothing active are deleted this long after they were consumed. */
  readonly cooperationSignalRetentionS: number;
  /** AUDIT_RETENTION_S: audit entries are deleted this long after they were written (long by default). */
  readonly auditRetentionS: number;
  /** LIFECYCLE_CLOCK_ADJUSTABLE=true: administrators may move the lifecycle clock (`PUT /api/v1/admin/lifecycle-clock`) that session TTLs and retention go by, for tests; else that route is not found. */
  readonly lifecycleClockAdjustable: boolean;
  /** STORAGE_QUOTA_BYTES: the most bytes one account's sessions may store (0: no quota); an input past it is refused at acceptance. */
  readonly storageQuotaBytes: number;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.port = int(env, 'PORT', 3000);
    this.databaseUrl = required(env, 'DATABASE_URL');
    this.redisUrl = required(env, 'REDIS_URL');
    this.redisCluster = redisClusterSettings(env);
    this.defaultModel = env.DEFAULT_MODEL || 'scripted:echo';
    this.bootstrapApiKey = env.BOOTSTRAP_API_KEY || undefined;
    // The upstream API's bound. The 72 MiB of inline images a submission may carry are 96 MiB as base64 in JSON, plus its text.
    this.bodyLimit = env.BODY_LIMIT || '100mb';
    this.maxConcurrentLargeBodies = Math.max(0, int(env, 'MAX_CONCURRENT_LARGE_BODIES', 2));
    // Every text byte is tokenized, stored and sent to the model again on each call of the session.
    this.maxInputTextBytes = Math.max(1024, int(env, 'MAX_INPUT_TEXT_BYTES', 256 * 1024));
    this.eventsReplayMaxLen = int(env, 'EVENTS_REPLAY_MAXLEN', 10_000);
    this.eventsReplayTtlSeconds = int(env, 'EVENTS_REPLAY_TTL_SECONDS', 7 * 24 * 3600);
    this.sseHeartbeatMs = int(env, 'SSE_HEARTBEAT_MS', 15_000);
    this.sseMaxBufferedBytes = Math.max(16 * 1024, int(env, 'SSE_MAX_BUFFERED_BYTES', 1024 * 1024));
    this.eventItemContentBytes = Math.max(1024, int(env, 'EVENT_ITEM_CONTENT_BYTES', 64 * 1024));
    this.runLeaseMs = int(env, 'RUN_LEASE_MS', 30_000);
    this.runHeartbeatMs = int(env, 'RUN_HEARTBEAT_MS', 10_000);
    this.recoverySweepMs = int(env, 'RECOVERY_SWEEP_MS', 10_000);
    this.recoveryGraceMs = int(env, 'RECOVERY_GRACE_MS', 5_000);
    this.runMaxTakeovers = int(env, 'RUN_MAX_TAKEOVERS', 3);
    this.outboxRelayMs = int(env, 'OUTBOX_RELAY_MS', 500);
    // Hours, fractions allowed (a test replica remembers keys for seconds).
    this.idempotencyTtlHours = positiveNumber(env, 'IDEMPOTENCY_TTL_HOURS', 24);
    this.workerConcurrency = int(env, 'WORKER_CONCURRENCY', 32);
    this.workerLingerMs = int(env, 'WORKER_LINGER_MS', 2_000);
    this.workerHealthPort = int(env, 'WORKER_HEALTH_PORT', 3001);
    this.workerHeartbeatMs = Math.max(100, int(env, 'WORKER_HEARTBEAT_MS', 5_000));
    this.dbPoolSize = int(env, 'DB_POOL_SIZE', 20);
    this.dbQueryTimeoutMs = int(env, 'DB_QUERY_TIMEOUT_MS', 10_000);
    this.openaiBaseUrl = env.OPENAI_BASE_URL || 'https://api.openai.com/v1';
    this.openaiApiKey = env.OPENAI_API_KEY || '';
    this.modelTimeoutMs = int(env, 'MODEL_TIMEOUT_MS', 120_000);
    this.modelMaxRetries = int(env, 'MODEL_MAX_RETRIES', 3);
    this.modelRetryMaxDelayMs = int(env, 'MODEL_RETRY_MAX_DELAY_MS', 20_000);
    this.toolTimeoutMs = int(env, 'TOOL_TIMEOUT_MS', 60_000);
    this.mcpSessionIdleMs = int(env, 'MCP_SESSION_IDLE_MS', 300_000);
    this.mcpMaxSessions = int(env, 'MCP_MAX_SESSIONS', 64);
    this.mcpElicitationTimeoutMs = int(env, 'MCP_ELICITATION_TIMEOUT_MS', 600_000);
    this.mcpAllowPrivateNetworks = bool(env, 'MCP_ALLOW_PRIVATE_NETWORKS', false);
    this.mcpSamplingMaxTokens = Math.max(1, int(env, 'MCP_SAMPLING_MAX_TOKENS', 4096));
    this.mcpMaxResponseBytes = Math.max(64 * 1024, int(env, 'MCP_MAX_RESPONSE_BYTES', 32 * 1024 * 1024));
    try {
      this.mcpAllowedHosts = parseAllowedHosts(env.MCP_ALLOWED_HOSTS ?? '');
    } catch (error) {
      throw new Error(`MCP_ALLOWED_HOSTS: ${(error as Error).message}`, { cause: error });
    }
    this.webSearch = webSearchSettings(env);
    this.sandbox = sandboxSettings(env);
    this.agentsFile = env.AGENTS_FILE || undefined;
    this.modelPricesFile = env.MODEL_PRICES_FILE || undefined;
    this.apiKeyHashSecret = env.API_KEY_HASH_SECRET || undefined;
    if (this.apiKeyHashSecret !== undefined && this.apiKeyHashSecret.length < 32) throw new Error('API_KEY_HASH_SECRET must be at least 32 characters');
    this.jwtSecret = env.JWT_SECRET || undefined;
    this.jwtJwksUrl = env.JWT_JWKS_URL || undefined;
    this.jwtIssuer = env.JWT_ISSUER || undefined;
    this.jwtAudience = env.JWT_AUDIENCE || undefined;
    if (this.jwtSecret !== undefined && this.jwtSecret.length < 32) throw new Error('JWT_SECRET must be at least 32 characters (a short HS256 secret can be guessed offline from any token)');
    if ((this.jwtSecret || this.jwtJwksUrl) && !this.jwtAudience) {
      throw new Error('JWT_AUDIENCE is required when user tokens are accepted: without it, any token of the identity provider would do');
    }
    // A JWKS is usually a shared identity provider's: without the issuer, a token it signed for another tenant or realm would do.
    if (this.jwtJwksUrl && !this.jwtIssuer) throw new Error('JWT_ISSUER is required with JWT_JWKS_URL: without it, any issuer the key set signs for would do');
    this.userTokenKeyMaxTtlS = Math.max(60, int(env, 'USER_TOKEN_KEY_MAX_TTL_S', 30 * 24 * 3600));
    this.rateLimitPerMinute = int(env, 'RATE_LIMIT_PER_MINUTE', 1200);
    this.endUserRateLimitPerMinute = int(env, 'END_USER_RATE_LIMIT_PER_MINUTE', 300);
    this.maxStreamsPerPrincipal = int(env, 'MAX_STREAMS_PER_PRINCIPAL', 20);
    this.userRateLimitPerMinute = int(env, 'USER_RATE_LIMIT_PER_MINUTE', 1200);
    this.appRateLimitPerMinute = int(env, 'APP_RATE_LIMIT_PER_MINUTE', 1200);
    this.maxStreamsPerAccount = int(env, 'MAX_STREAMS_PER_ACCOUNT', 50);
    this.maxKeysPerUser = int(env, 'MAX_KEYS_PER_USER', 100);
    this.newEndUsersPerMinute = int(env, 'NEW_END_USERS_PER_MINUTE', 120);
    this.authFailureLimitPerMinute = int(env, 'AUTH_FAILURE_LIMIT_PER_MINUTE', 60);
    this.trustProxy = parseTrustProxy(env.TRUST_PROXY);
    this.authNegativeCacheMax = int(env, 'AUTH_NEGATIVE_CACHE_MAX', 10_000);
    this.maxActiveTurnsPerOwner = int(env, 'MAX_ACTIVE_TURNS_PER_OWNER', 200);
    this.maxSubagentsPerTree = int(env, 'MAX_SUBAGENTS_PER_TREE', 100);
    this.maxSubagentCreatesPerTurn = int(env, 'MAX_SUBAGENT_CREATES_PER_TURN', 20);
    this.rateLimitLeasePercent = int(env, 'RATE_LIMIT_LEASE_PERCENT', 1);
    if (this.rateLimitLeasePercent > 50) throw new Error('RATE_LIMIT_LEASE_PERCENT must be at most 50 (a lease that large lets one replica hold half a window)');
    this.authCacheTtlMs = int(env, 'AUTH_CACHE_TTL_MS', 10_000);
    this.authInvalidationWaitMs = int(env, 'AUTH_INVALIDATION_WAIT_MS', 2_000);
    // Off unless the deployment turns them on: the demo models cost nothing, so an open install must not offer them (npm start and npm test turn them on).
    this.scriptedModelsEnabled = oneOf(env, 'SCRIPTED_MODELS', ['enabled', 'disabled'], 'disabled') === 'enabled';
    this.modelAllowlist = modelAllowlist(env.MODEL_ALLOWLIST);
    this.scriptedMaxDelayMs = int(env, 'SCRIPTED_MAX_DELAY_MS', 10_000);
    this.scriptedMaxWords = int(env, 'SCRIPTED_MAX_WORDS', 5_000);
    this.storage = storageSettings(env);
    this.fileDraftTtlS = Math.max(1, int(env, 'FILE_DRAFT_TTL_S', 24 * 3600));
    this.fileSweepMs = Math.max(100, int(env, 'FILE_SWEEP_MS', 60_000));
    this.fileQuotaBytes = int(env, 'FILE_QUOTA_BYTES', 1024 * 1024 * 1024);
    this.fileQuotaDrafts = int(env, 'FILE_QUOTA_DRAFTS', 100);
    this.sessionImageBytes = Math.max(0, int(env, 'SESSION_IMAGE_BYTES', 512 * 1024 * 1024));
    this.modelRequestImageBytes = Math.max(0, int(env, 'MODEL_REQUEST_IMAGE_BYTES', 20 * 1024 * 1024));
    this.ocrTimeoutMs = Math.max(1000, int(env, 'OCR_TIMEOUT_MS', 30_000));
    this.fileWorkPerPrincipal = Math.max(1, int(env, 'FILE_WORK_PER_PRINCIPAL', 2));
    this.modelRequestAudit = oneOf(env, 'MODEL_REQUEST_AUDIT', ['off', 'on'], 'off') === 'on';
    this.secretsKey = env.SECRETS_KEY || undefined;
    if (this.secretsKey !== undefined && this.secretsKey.length < 32) throw new Error('SECRETS_KEY must be at least 32 characters (e.g. openssl rand -hex 32)');
    this.allowUnsealedSecrets = bool(env, 'ALLOW_UNSEALED_SECRETS', false);
    if (env.NODE_ENV === 'production' && this.secretsKey === undefined && !this.allowUnsealedSecrets) {
      throw new Error('SECRETS_KEY is required in production (NODE_ENV=production): webhook secrets would be stored unsealed. Set it (openssl rand -hex 32), or ALLOW_UNSEALED_SECRETS=true to accept unsealed secrets');
    }
    this.webhookAllowPrivateNetworks = bool(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false);
    this.webhookRetrySchedule = env.WEBHOOK_RETRY_SCHEDULE ?? '';
    this.webhookTimeoutMs = Math.max(100, int(env, 'WEBHOOK_TIMEOUT_MS', 15_000));
    this.webhookDisableAfterS = Math.max(1, int(env, 'WEBHOOK_DISABLE_AFTER_S', 5 * 24 * 3600));
    this.webhookSweepMs = Math.max(100, int(env, 'WEBHOOK_SWEEP_MS', 5_000));
    this.webhookConcurrency = Math.max(1, int(env, 'WEBHOOK_CONCURRENCY', 16));
    this.webhookRetentionS = Math.max(3600, int(env, 'WEBHOOK_RETENTION_S', 30 * 24 * 3600));
    this.usageClockAdjustable = bool(env, 'USAGE_CLOCK_ADJUSTABLE', false);
    this.forkMaxDepth = Math.min(32, Math.max(1, int(env, 'FORK_MAX_DEPTH', 8)));
    this.traceRetentionS = Math.max(60, int(env, 'TRACE_RETENTION_S', 7 * 24 * 3600));
    this.traceUrlTemplate = (env.TRACE_URL_TEMPLATE ?? '').trim();
    this.automationSweepMs = Math.max(100, int(env, 'AUTOMATION_SWEEP_MS', 10_000));
    this.automationInvocationsKept = Math.max(1, int(env, 'AUTOMATION_INVOCATIONS_KEPT', 1000));
    this.automationMisfireGraceS = Math.max(1, int(env, 'AUTOMATION_MISFIRE_GRACE_S', 60));
    this.automationCatchUpMax = Math.min(1000, Math.max(1, int(env, 'AUTOMATION_CATCH_UP_MAX', 10)));
    this.automationMaxPerOwner = Math.max(1, int(env, 'AUTOMATION_MAX_PER_OWNER', 100));
    this.automationMinIntervalS = Math.max(1, int(env, 'AUTOMATION_MIN_INTERVAL_S', 60));
    this.retentionSweepMs = Math.max(100, int(env, 'RETENTION_SWEEP_MS', 60_000));
    this.retentionBatchRows = Math.min(10_000, Math.max(1, int(env, 'RETENTION_BATCH_ROWS', 500)));
    // At least a minute: the relay and the webhooks may still be working on the delete's own events.
    this.sessionPurgeAfterS = Math.max(60, int(env, 'SESSION_PURGE_AFTER_S', 7 * 24 * 3600));
    this.modelRequestRetentionS = Math.max(60, int(env, 'MODEL_REQUEST_RETENTION_S', 30 * 24 * 3600));
    this.cooperationSignalRetentionS = Math.max(60, int(env, 'COOPERATION_SIGNAL_RETENTION_S', 7 * 24 * 3600));
    this.auditRetentionS = Math.max(24 * 3600, int(env, 'AUDIT_RETENTION_S', 400 * 24 * 3600));
    this.lifecycleClockAdjustable = bool(env, 'LIFECYCLE_CLOCK_ADJUSTABLE', false);
    this.storageQuotaBytes = Math.max(0, int(env, 'STORAGE_QUOTA_BYTES', 0));
    if (this.runHeartbeatMs >= this.runLeaseMs) {
      throw new Error('RUN_HEARTBEAT_MS must be shorter than RUN_LEASE_MS');
    }
  }
}
