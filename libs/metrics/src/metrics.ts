import { collectDefaultMetrics, Counter, Gauge, Histogram, type Metric, Registry } from 'prom-client';

/** Which process a metric is exposed by. */
export type ProcessRole = 'api' | 'worker';
export type TurnOutcome = 'completed' | 'failed' | 'cancelled';
export type TakeoverReason = 'lease_expired' | 'released';
export type ToolSource = 'builtin' | 'mcp' | 'client' | 'coordination' | 'environment' | 'unknown';
/** success / error: the tool ran; not_run: a result recorded without running it; delegated: handed to the client; aborted: stopped mid-call. */
export type ToolCallOutcome = 'success' | 'error' | 'not_run' | 'delegated' | 'aborted';
/** ok: exit 0; exit_nonzero: the command failed by itself; limit: the sandbox ended it on a limit. */
export type SandboxCommandResultLabel = 'ok' | 'exit_nonzero' | 'limit';
export type PostgresComponent = 'connect' | 'query' | 'pool';
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
}
export interface QueueCount {
  queue: string;
  state: string;
  count: number;
}

/** A metric's documented shape (docs/metrics.md lists exactly these). */
export interface MetricDefinition {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  labels: string[];
  roles: ProcessRole[];
}

const TURN_OUTCOMES: TurnOutcome[] = ['completed', 'failed', 'cancelled'];
const TAKEOVER_REASONS: TakeoverReason[] = ['lease_expired', 'released'];
const SANDBOX_RESULTS: SandboxCommandResultLabel[] = ['ok', 'exit_nonzero', 'limit'];
/** The limits a sandbox ends a command on (libs/sandbox's LimitHit). */
const SANDBOX_LIMITS = ['timeout', 'cpu', 'memory', 'processes', 'file_size', 'output', 'disk'];
const POSTGRES_COMPONENTS: PostgresComponent[] = ['connect', 'query', 'pool'];
/** A scrape never waits longer than this for a gauge read from Postgres or Redis; the gauge is then left out. */
const COLLECT_TIMEOUT_MS = 2_000;

const BOTH: ProcessRole[] = ['api', 'worker'];
const API: ProcessRole[] = ['api'];
const WORKER: ProcessRole[] = ['worker'];

/**
 * Every metric of the api and the worker, with one typed recording method each, so instrumented
 * code stays one line. A process registers the metrics of its role (`register`) in its own
 * registry, with prom-client's default process metrics; recording a metric of the other role is
 * harmless and never exposed. Names are prefixed `yuxi_`; label values come from closed sets (the
 * HTTP route is the matched pattern, never the raw path).
 */
export class Metrics {
  readonly registry = new Registry();
  private role: ProcessRole | null = null;
  private readonly defs: { metric: Metric; type: MetricDefinition['type']; name: string; labels: string[]; roles: ProcessRole[] }[] = [];
  private relayLagSource: (() => Promise<number | null>) | null = null;
  private queueDepthSource: (() => Promise<QueueCount[]>) | null = null;

  // --- api ---
  private readonly httpRequests = this.counter(API, 'yuxi_http_requests_total', 'HTTP requests answered, by method, route pattern and status', ['method', 'route', 'status']);
  private readonly httpDuration = this.histogram(
    API,
    'yuxi_http_request_duration_seconds',
    'HTTP request latency from arrival to the end of the response (event streams are not observed: their duration is the connection)',
    ['method', 'route', 'status'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  private readonly inputs = this.counter(API, 'yuxi_inputs_accepted_total', 'Inputs accepted (a new receipt, replays excluded), by event type', ['type']);
  private readonly sse = this.gauge(API, 'yuxi_sse_connections', 'Open SSE event streams of this process', []);
  private readonly sseCut = this.counter(
    API,
    'yuxi_sse_slow_readers_cut_total',
    'Event streams ended because their client read too slowly (more than SSE_MAX_BUFFERED_BYTES waiting); each was told to reconnect (retry:) and resumes from its cursor',
    [],
  );
  private readonly relayLag = this.gauge(
    API,
    'yuxi_event_relay_lag_seconds',
    'Age of the outbox relay watermark: every event committed before it is confirmed in its Redis stream (read from Postgres on scrape)',
    [],
    async () => this.collectRelayLag(),
  );

  // --- both ---
  private readonly automationInvocations = this.counter(BOTH, 'yuxi_automation_invocations_total', 'Automation invocations recorded, by source (automation, manual), status and reason', ['source', 'status', 'reason']);
  private readonly automationFireLag = this.histogram(BOTH, 'yuxi_automation_fire_lag_seconds', 'Lag from a scheduled time to the acceptance of its input', [], [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600]);
  private readonly turnsFinished = this.counter(BOTH, 'yuxi_turns_finished_total', 'Turns that ended, by outcome', ['outcome']);
  private readonly turnDuration = this.histogram(
    BOTH,
    'yuxi_turn_duration_seconds',
    'Turn duration from its claim to its end (waits at waitpoints included), by outcome',
    ['outcome'],
    [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900],
  );
  private readonly redisErrors = this.counter(BOTH, 'yuxi_redis_errors_total', 'Redis connection errors and commands that failed for want of Redis (timeouts, closed connections), by connection', [
    'component',
  ]);
  private readonly postgresErrors = this.counter(BOTH, 'yuxi_postgres_errors_total', 'Postgres errors: connections that could not be opened, failed statements, pooled connections that broke', [
    'component',
  ]);

  // --- worker ---
  private readonly queueJobs = this.gauge(WORKER, 'yuxi_queue_jobs', 'BullMQ jobs by queue and state (read from Redis on scrape)', ['queue', 'state'], async () => this.collectQueueDepth());
  private readonly jobWait = this.histogram(
    WORKER,
    'yuxi_queue_job_wait_seconds',
    'Time a job waited from its enqueue (or scheduled time) to the start of its processing',
    ['queue'],
    [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
  );
  private readonly takeovers = this.counter(WORKER, 'yuxi_run_takeovers_total', 'Runs interrupted and handed to a new run of their turn that any worker takes over, by reason', ['reason']);
  private readonly modelCalls = this.counter(WORKER, 'yuxi_model_calls_total', 'Model provider calls (each retry is a call), by provider and outcome', ['provider', 'outcome']);
  private readonly modelDuration = this.histogram(
    WORKER,
    'yuxi_model_call_duration_seconds',
    'Model call latency from the request to the end of its stream, by provider',
    ['provider'],
    [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120],
  );
  private readonly providerTokens = this.counter(WORKER, 'yuxi_provider_tokens_total', 'Tokens reported by model providers, by provider and kind (cached: input tokens served from the prompt cache)', [
    'provider',
    'kind',
  ]);
  private readonly modelTokens = this.counter(WORKER, 'yuxi_model_tokens_total', 'Tokens of committed model calls (the usage ledger), by model, agent and type (cached: part of input; reasoning: part of output)', [
    'model',
    'agent',
    'type',
  ]);
  private readonly modelCost = this.counter(WORKER, 'yuxi_model_cost_microusd_total', 'Cost of committed model calls at the deployment\'s prices, in micro-dollars, by model and agent (unpriced calls add nothing)', ['model', 'agent']);
  private readonly toolCalls = this.counter(WORKER, 'yuxi_tool_calls_total', 'Tool calls of the model handled by the worker, by source and outcome', ['source', 'outcome']);
  private readonly mcpSessions = this.counter(WORKER, 'yuxi_mcp_sessions_opened_total', 'MCP sessions the worker initialised, by reason (new, or reinitialized after the server forgot one)', ['reason']);
  private readonly mcpSessionsOpen = this.gauge(WORKER, 'yuxi_mcp_sessions_open', 'MCP sessions this worker holds open (in use and idle)', []);
  private readonly webhookAttempts = this.counter(WORKER, 'yuxi_webhook_attempts_total', 'Webhook delivery attempts, by outcome (succeeded, failed, timeout, network_error, blocked)', ['outcome']);
  private readonly webhookDeliveries = this.counter(WORKER, 'yuxi_webhook_deliveries_total', 'Webhook deliveries finished, by outcome (succeeded; failed: every attempt of the schedule failed)', ['outcome']);
  private readonly webhookDuration = this.histogram(
    WORKER,
    'yuxi_webhook_attempt_duration_seconds',
    'Webhook attempt latency from the request to the receiver\'s response head (or the failure)',
    [],
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
  );
  private readonly webhookBacklog = this.gauge(WORKER, 'yuxi_webhook_backlog', 'Webhook deliveries pending (due or waiting for a retry), as the last sweep of this worker counted them', []);
  private readonly webhookDisabled = this.counter(WORKER, 'yuxi_webhook_endpoints_disabled_total', 'Webhook endpoints disabled by delivery results, by reason (gone: a 410; failing: failing for WEBHOOK_DISABLE_AFTER_S)', ['reason']);
  private readonly retentionRows = this.counter(WORKER, 'yuxi_retention_rows_removed_total', 'Rows the retention tasks removed, by kind (deleted_sessions, model_requests, cooperation_signals, audit; session_ttl: sessions archived or deleted)', ['kind']);
  private readonly retentionBytes = this.counter(WORKER, 'yuxi_retention_bytes_removed_total', 'Stored bytes of the rows the retention tasks removed, by kind', ['kind']);
  private readonly retentionLag = this.gauge(WORKER, 'yuxi_retention_lag_seconds', 'How long the oldest row due for removal has been due, by kind, as this worker\'s last retention sweep saw it (0: nothing due)', ['kind']);
  private readonly retentionFailures = this.counter(WORKER, 'yuxi_retention_failures_total', 'Retention batches that failed (retried at the next sweep), by kind', ['kind']);
  private readonly sessionPurgeQuarantined = this.counter(WORKER, 'yuxi_session_purge_quarantined_total', 'Deleted sessions whose purge failed when retried alone: held, retried an hour later by the lifecycle clock, while the rest of the queue goes on', []);
  private readonly sandboxCommands = this.counter(WORKER, 'yuxi_sandbox_commands_total', 'Commands run in a sandbox, by result (ok, exit_nonzero, limit)', ['result']);
  private readonly sandboxDuration = this.histogram(
    WORKER,
    'yuxi_sandbox_command_duration_seconds',
    'Sandboxed command duration, from starting the sandbox to its end',
    [],
    [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
  );
  private readonly automationsActive = this.gauge(WORKER, 'yuxi_automations_active', 'Automations active (with a next scheduled time), as the last automations sweep of this worker counted them', []);
  private readonly automationsDue = this.gauge(
    WORKER,
    'yuxi_automations_due',
    'Active automations whose scheduled time has passed and is not fired yet (the automations sweep\'s backlog), as its last run of this worker counted them',
    [],
  );
  private readonly sandboxLimits = this.counter(WORKER, 'yuxi_sandbox_limit_hits_total', 'Sandboxed commands ended on a limit, by limit (timeout, cpu, memory, processes, file_size, output, disk)', ['limit']);

  /**
   * Exposes the metrics of `role` (and the default process metrics, `yuxi_` prefixed) in this
   * registry, every series labelled `app=<role>`. Once per process; a second call is ignored.
   */
  register(role: ProcessRole): void {
    if (this.role) return;
    this.role = role;
    this.registry.setDefaultLabels({ app: role });
    for (const def of this.defs) if (def.roles.includes(role)) this.registry.registerMetric(def.metric);
    collectDefaultMetrics({ register: this.registry, prefix: 'yuxi_' });
    // Known label values start at zero, so rate() and increase() see their first event.
    for (const outcome of TURN_OUTCOMES) {
      this.turnsFinished.inc({ outcome }, 0);
      this.turnDuration.zero({ outcome });
    }
    for (const component of POSTGRES_COMPONENTS) this.postgresErrors.inc({ component }, 0);
    for (const reason of TAKEOVER_REASONS) this.takeovers.inc({ reason }, 0);
    for (const result of SANDBOX_RESULTS) this.sandboxCommands.inc({ result }, 0);
    for (const limit of SANDBOX_LIMITS) this.sandboxLimits.inc({ limit }, 0);
    // The api fires run now, the worker the scheduled times.
    this.automationInvocations.inc(role === 'api' ? { source: 'manual', status: 'completed', reason: 'manual' } : { source: 'automation', status: 'completed', reason: 'scheduled' }, 0);
  }

  /** The registered metrics in the Prometheus text format. */
  async scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric with its type, labels and the processes that expose it. */
  definitions(): MetricDefinition[] {
    return this.defs.map(({ name, type, labels, roles }) => ({ name, type, labels, roles }));
  }

  // --- recording ---

  /** `seconds` null: counted, not timed (an event stream). */
  httpRequest(method: string, route: string, status: string, seconds: number | null): void {
    const labels = { method, route, status };
    this.httpRequests.inc(labels);
    if (seconds !== null) this.httpDuration.observe(labels, seconds);
  }

  inputAccepted(type: string): void {
    this.inputs.inc({ type });
  }

  sseOpened(): void {
    this.sse.inc();
  }

  sseClosed(): void {
    this.sse.dec();
  }

  sseSlowReaderCut(): void {
    this.sseCut.inc();
  }

  turnFinished(outcome: TurnOutcome, seconds: number): void {
    this.turnsFinished.inc({ outcome });
    this.turnDuration.observe({ outcome }, Math.max(0, seconds));
  }

  redisError(component: string): void {
    this.redisErrors.inc({ component });
  }

  postgresError(component: PostgresComponent): void {
    this.postgresErrors.inc({ component });
  }

  jobStarted(queue: string, waitSeconds: number): void {
    this.jobWait.observe({ queue }, Math.max(0, waitSeconds));
  }

  runTakenOver(reason: TakeoverReason): void {
    this.takeovers.inc({ reason });
  }

  modelCall(provider: string, outcome: string, seconds: number): void {
    this.modelCalls.inc({ provider, outcome });
    this.modelDuration.observe({ provider }, seconds);
  }

  modelUsage(provider: string, usage: TokenUsage): void {
    this.providerTokens.inc({ provider, kind: 'input' }, usage.input_tokens);
    this.providerTokens.inc({ provider, kind: 'output' }, usage.output_tokens);
    this.providerTokens.inc({ provider, kind: 'cached' }, usage.cached_tokens);
  }

  /** A committed model call's ledger row: its tokens by type and its cost (null: the model has no price). */
  modelSpend(model: string, agent: string, usage: TokenUsage & { reasoning_tokens: number }, costMicroUsd: number | null): void {
    this.modelTokens.inc({ model, agent, type: 'input' }, usage.input_tokens);
    this.modelTokens.inc({ model, agent, type: 'output' }, usage.output_tokens);
    this.modelTokens.inc({ model, agent, type: 'cached' }, usage.cached_tokens);
    this.modelTokens.inc({ model, agent, type: 'reasoning' }, usage.reasoning_tokens);
    if (costMicroUsd !== null) this.modelCost.inc({ model, agent }, costMicroUsd);
  }

  toolCall(source: ToolSource, outcome: ToolCallOutcome, count = 1): void {
    this.toolCalls.inc({ source, outcome }, count);
  }

  mcpSessionOpened(reason: 'new' | 'reinitialized', open: number): void {
    this.mcpSessions.inc({ reason });
    this.mcpSessionsOpen.set(open);
  }

  mcpSessionsHeld(open: number): void {
    this.mcpSessionsOpen.set(open);
  }

  webhookAttempt(outcome: string, seconds: number): void {
    this.webhookAttempts.inc({ outcome });
    this.webhookDuration.observe(seconds);
  }

  webhookDelivered(outcome: 'succeeded' | 'failed'): void {
    this.webhookDeliveries.inc({ outcome });
  }

  webhookPending(count: number): void {
    this.webhookBacklog.set(count);
  }

  /** After a retention batch committed; with nothing removed, at the worker's start: each kind's series exists from then on. */
  retentionRemoved(kind: string, rows = 0, bytes = 0): void {
    this.retentionRows.inc({ kind }, rows);
    this.retentionBytes.inc({ kind }, bytes);
  }

  retentionLagSeen(kind: string, seconds: number): void {
    this.retentionLag.set({ kind }, Math.max(0, seconds));
  }

  retentionFailed(kind: string, count = 1): void {
    this.retentionFailures.inc({ kind }, count);
  }

  sessionPurgeFailed(): void {
    this.sessionPurgeQuarantined.inc();
  }

  webhookEndpointDisabled(reason: 'gone' | 'failing'): void {
    this.webhookDisabled.inc({ reason });
  }

  /**
   * After the invocation's transaction committed; `lagSeconds` for a scheduled time that fired,
   * `count` for invocations recorded at once (the missed times of one catch-up).
   */
  automationInvocation(source: string, status: string, reason: string, lagSeconds: number | null = null, count = 1): void {
    this.automationInvocations.inc({ source, status, reason }, count);
    if (lagSeconds !== null) this.automationFireLag.observe(Math.max(0, lagSeconds));
  }

  sandboxCommand(result: SandboxCommandResultLabel, seconds: number, limit: string | null): void {
    this.sandboxCommands.inc({ result });
    this.sandboxDuration.observe(Math.max(0, seconds));
    if (limit !== null) this.sandboxLimits.inc({ limit });
  }

  automationsCounted(active: number, due: number): void {
    this.automationsActive.set(active);
    this.automationsDue.set(due);
  }

  // --- gauges read on scrape ---

  /** Where the relay lag is read from on each scrape (the api sets it; null: unknown). */
  setRelayLagSource(source: () => Promise<number | null>): void {
    this.relayLagSource = source;
  }

  /** Where queue depths are read from on each scrape (the worker sets it). */
  setQueueDepthSource(source: () => Promise<QueueCount[]>): void {
    this.queueDepthSource = source;
  }

  /** NaN when unknown (Postgres could not be read): never a stale value. */
  private async collectRelayLag(): Promise<void> {
    const lag = this.relayLagSource ? await bounded(this.relayLagSource()) : null;
    this.relayLag.set(lag ?? Number.NaN);
  }

  private async collectQueueDepth(): Promise<void> {
    const counts = this.queueDepthSource ? await bounded(this.queueDepthSource()) : null;
    this.queueJobs.reset();
    for (const { queue, state, count } of counts ?? []) this.queueJobs.set({ queue, state }, count);
  }

  // --- definitions ---

  private counter<L extends string>(roles: ProcessRole[], name: string, help: string, labels: L[]): Counter<L> {
    return this.define(roles, 'counter', labels, new Counter({ name, help, labelNames: labels, registers: [] }));
  }

  private gauge<L extends string>(roles: ProcessRole[], name: string, help: string, labels: L[], collect?: () => Promise<void>): Gauge<L> {
    return this.define(roles, 'gauge', labels, new Gauge({ name, help, labelNames: labels, registers: [], ...(collect ? { collect } : {}) }));
  }

  private histogram<L extends string>(roles: ProcessRole[], name: string, help: string, labels: L[], buckets: number[]): Histogram<L> {
    return this.define(roles, 'histogram', labels, new Histogram({ name, help, labelNames: labels, buckets, registers: [] }));
  }

  private define<M extends Metric>(roles: ProcessRole[], type: MetricDefinition['type'], labels: string[], metric: M): M {
    this.defs.push({ metric, type, name: (metric as unknown as { name: string }).name, labels, roles });
    return metric;
  }
}

/** The value, or null when it failed or took longer than a scrape may wait. */
async function bounded<T>(promise: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), COLLECT_TIMEOUT_MS);
    timer.unref();
  });
  try {
    return await Promise.race([promise.catch(() => null), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** This process's metrics. */
export const metrics = new Metrics();
