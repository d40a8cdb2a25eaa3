import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Metrics, metrics, routeLabel, routeMatcher, toolSourceLabel, UNMATCHED_ROUTE } from '#libs/metrics';
import { ModelError, type ModelEvent, type ModelProvider, type ModelRequest } from '#libs/models';
import { measuredProvider } from '#libs/runtime';
import { documentedMetrics, parseExposition, total } from '../support/metrics.js';

// The metrics lib without the stack: route labels, tool sources, what each process registers, the
// documented table against the code and model call outcomes. (Which Redis failures count needs a
// live Redis: test/e2e/metrics.test.ts.)

const PATTERNS = [
  '/health',
  '/api/v1/agents/sessions',
  '/api/v1/agents/sessions/:session_id',
  '/api/v1/agents/sessions/:session_id/events',
  '/api/v1/agents/sessions/:session_id/turns/:turn_id/items',
  '/api/v1/agents/:agent_id',
  '/files/*path',
  '/docs{/:page}',
];
const ID = '0190f6a2-8bdf-7435-8da3-a93fcf70dbb0';

describe('route labels', () => {
  const match = routeMatcher(PATTERNS);

  it('replaces ids with the pattern that routes the path', () => {
    assert.equal(match(`/api/v1/agents/sessions/${ID}`), '/api/v1/agents/sessions/:session_id');
    assert.equal(match(`/api/v1/agents/sessions/${ID}/events`), '/api/v1/agents/sessions/:session_id/events');
    assert.equal(match(`/api/v1/agents/sessions/${ID}/turns/${ID}/items`), '/api/v1/agents/sessions/:session_id/turns/:turn_id/items');
  });

  it('takes the first pattern in registration order, as Express does', () => {
    assert.equal(match('/api/v1/agents/sessions'), '/api/v1/agents/sessions');
    assert.equal(match('/api/v1/agents/default-chatbot'), '/api/v1/agents/:agent_id');
  });

  it('matches case-insensitively, with an optional trailing slash', () => {
    assert.equal(match(`/API/V1/Agents/Sessions/${ID}/EVENTS/`), '/api/v1/agents/sessions/:session_id/events');
    assert.equal(match('/health/'), '/health');
  });

  it('knows wildcards and optional parts', () => {
    assert.equal(match('/files/a/b/c.txt'), '/files/*path');
    assert.equal(match('/docs'), '/docs{/:page}');
    assert.equal(match('/docs/intro'), '/docs{/:page}');
  });

  it('with the method, takes the first route that serves it; a path no route of its method serves keeps its first pattern', () => {
    const routes = routeMatcher([
      { path: '/api/v1/admin/sessions/:session_id', methods: ['get'] },
      { path: '/api/v1/admin/sessions/bulk-cancel', methods: ['post'] },
    ]);
    assert.equal(routes('/api/v1/admin/sessions/bulk-cancel', 'POST'), '/api/v1/admin/sessions/bulk-cancel');
    assert.equal(routes(`/api/v1/admin/sessions/${ID}`, 'GET'), '/api/v1/admin/sessions/:session_id');
    assert.equal(routes(`/api/v1/admin/sessions/${ID}`, 'HEAD'), '/api/v1/admin/sessions/:session_id', 'HEAD is served by GET');
    assert.equal(routes(`/api/v1/admin/sessions/${ID}`, 'DELETE'), '/api/v1/admin/sessions/:session_id', 'a wrong method is still that path\'s route');
    assert.equal(routes('/api/v1/admin/sessions/bulk-cancel'), '/api/v1/admin/sessions/:session_id', 'without a method: the first pattern, as before');
  });

  it('matches no more than the pattern: extra or missing segments, regex characters taken literally', () => {
    assert.equal(match(`/api/v1/agents/sessions/${ID}/nothing`), null);
    assert.equal(match('/api/v1/agents/sessions//events'), null);
    assert.equal(match('/healthz'), null);
    assert.equal(routeMatcher(['/a.b'])('/aXb'), null);
  });

  it('labels with the matched route when routing found one, else the matcher, else unmatched', () => {
    assert.equal(routeLabel({ path: '/:agent_id' }, '/api/v1/agents', `/api/v1/agents/x`, match), '/api/v1/agents/:agent_id');
    assert.equal(routeLabel(undefined, '', `/api/v1/agents/sessions/${ID}`, match), '/api/v1/agents/sessions/:session_id');
    assert.equal(routeLabel(undefined, '', `/wp-admin/${ID}.php`, match), UNMATCHED_ROUTE);
    assert.equal(routeLabel({ path: /regex/ }, '', '/health', match), '/health');
  });
});

describe('tool source labels', () => {
  it('folds MCP server labels into mcp and unknown sources into unknown', () => {
    assert.equal(toolSourceLabel('builtin'), 'builtin');
    assert.equal(toolSourceLabel('client'), 'client');
    assert.equal(toolSourceLabel('mcp:billing'), 'mcp');
    assert.equal(toolSourceLabel(undefined), 'unknown');
    assert.equal(toolSourceLabel('something-else'), 'unknown');
  });
});

describe('registration', () => {
  it('exposes the metrics of its role, labelled app=<role>, with yuxi_ default process metrics and zeroed known series', async () => {
    const api = new Metrics();
    api.register('api');
    const scrape = parseExposition(await api.scrape());
    assert.ok(scrape.types.has('yuxi_http_requests_total'));
    assert.ok(scrape.types.has('yuxi_turns_finished_total'));
    assert.ok(!scrape.types.has('yuxi_model_calls_total'), 'worker metrics stay off the api');
    assert.ok(scrape.types.has('yuxi_process_cpu_seconds_total'));
    assert.ok([...scrape.types.keys()].every((name) => name.startsWith('yuxi_')));
    assert.ok(scrape.samples.every((s) => s.labels.app === 'api'));
    assert.equal(total(scrape, 'yuxi_turns_finished_total', { outcome: 'cancelled' }), 0);
    assert.ok(scrape.samples.some((s) => s.name === 'yuxi_turns_finished_total' && s.labels.outcome === 'cancelled'), 'present before the first one');
    assert.ok(scrape.samples.some((s) => s.name === 'yuxi_postgres_errors_total' && s.labels.component === 'pool'));
    api.register('worker');
    assert.ok(!parseExposition(await api.scrape()).types.has('yuxi_model_calls_total'), 'a process has one role');
  });

  it('records what the methods say', async () => {
    const worker = new Metrics();
    worker.register('worker');
    worker.turnFinished('completed', 2);
    worker.toolCall('client', 'delegated', 3);
    worker.modelUsage('openai', { input_tokens: 10, output_tokens: 3, cached_tokens: 4 });
    worker.modelSpend('openai:gpt-x', 'agent_a', { input_tokens: 10, output_tokens: 3, cached_tokens: 4, reasoning_tokens: 2 }, 17);
    worker.modelSpend('openai:gpt-x', 'agent_a', { input_tokens: 1, output_tokens: 1, cached_tokens: 0, reasoning_tokens: 0 }, null);
    worker.jobStarted('session-dispatch', 0.02);
    worker.runTakenOver('lease_expired');
    const scrape = parseExposition(await worker.scrape());
    assert.equal(total(scrape, 'yuxi_turns_finished_total', { outcome: 'completed' }), 1);
    assert.equal(total(scrape, 'yuxi_turn_duration_seconds_sum', { outcome: 'completed' }), 2);
    assert.equal(total(scrape, 'yuxi_tool_calls_total', { source: 'client', outcome: 'delegated' }), 3);
    assert.equal(total(scrape, 'yuxi_provider_tokens_total', { provider: 'openai', kind: 'cached' }), 4);
    assert.equal(total(scrape, 'yuxi_model_tokens_total', { model: 'openai:gpt-x', agent: 'agent_a', type: 'input' }), 11);
    assert.equal(total(scrape, 'yuxi_model_tokens_total', { model: 'openai:gpt-x', agent: 'agent_a', type: 'reasoning' }), 2);
    assert.equal(total(scrape, 'yuxi_model_cost_microusd_total', { model: 'openai:gpt-x', agent: 'agent_a' }), 17, 'an unpriced call adds no cost');
    assert.equal(total(scrape, 'yuxi_queue_job_wait_seconds_count', { queue: 'session-dispatch' }), 1);
    assert.equal(total(scrape, 'yuxi_run_takeovers_total', { reason: 'lease_expired' }), 1);
  });

  it('reads scrape-time gauges from their sources; a failed read is unknown or absent, never stale', async () => {
    const api = new Metrics();
    api.register('api');
    const lag = async (): Promise<number[]> => parseExposition(await api.scrape()).samples.filter((x) => x.name === 'yuxi_event_relay_lag_seconds').map((x) => x.value);
    assert.deepEqual(await lag(), [Number.NaN], 'no source: unknown');
    api.setRelayLagSource(async () => 1.5);
    assert.deepEqual(await lag(), [1.5]);
    api.setRelayLagSource(async () => {
      throw new Error('database unreachable');
    });
    assert.deepEqual(await lag(), [Number.NaN], 'a failed read is unknown, not stale');

    const worker = new Metrics();
    worker.register('worker');
    worker.setQueueDepthSource(async () => [{ queue: 'session-dispatch', state: 'waiting', count: 7 }]);
    assert.equal(total(parseExposition(await worker.scrape()), 'yuxi_queue_jobs', { queue: 'session-dispatch', state: 'waiting' }), 7);
    worker.setQueueDepthSource(async () => {
      throw new Error('Redis unreachable');
    });
    assert.ok(!parseExposition(await worker.scrape()).samples.some((x) => x.name === 'yuxi_queue_jobs'));
  });
});

describe('docs/metrics.md', () => {
  it('documents every metric with its type, labels and processes, and nothing else', () => {
    const code = new Metrics().definitions().map((d) => ({ name: d.name, type: d.type, labels: d.labels, processes: d.roles }));
    const documented = documentedMetrics();
    assert.deepEqual(
      documented.sort((a, b) => a.name.localeCompare(b.name)),
      code.sort((a, b) => a.name.localeCompare(b.name)),
    );
  });
});

describe('model call outcomes', () => {
  metrics.register('worker');
  const provider = (stream: (request: ModelRequest) => AsyncIterable<ModelEvent>): ModelProvider => measuredProvider({ provider: 'scripted', stream });
  const request = (signal = new AbortController().signal): ModelRequest => ({ model: 'm', instructions: '', messages: [], tools: [], signal });
  const calls = async (outcome: string): Promise<number> => total(parseExposition(await metrics.scrape()), 'yuxi_model_calls_total', { provider: 'scripted', outcome });
  const drain = async (events: AsyncIterable<ModelEvent>): Promise<void> => {
    for await (const event of events) void event;
  };

  it('counts a finished call ok, with its tokens, and times it', async () => {
    const before = await calls('ok');
    await drain(
      provider(async function* () {
        yield { type: 'text_delta', delta: 'hi' };
        yield { type: 'usage', usage: { input_tokens: 5, output_tokens: 1, cached_tokens: 2, total_tokens: 6 } };
      }).stream(request()),
    );
    assert.equal(await calls('ok'), before + 1);
    const scrape = parseExposition(await metrics.scrape());
    assert.equal(total(scrape, 'yuxi_provider_tokens_total', { provider: 'scripted', kind: 'input' }), 5);
    assert.equal(total(scrape, 'yuxi_provider_tokens_total', { provider: 'scripted', kind: 'cached' }), 2);
    assert.ok(total(scrape, 'yuxi_model_call_duration_seconds_count', { provider: 'scripted' }) >= 1);
  });

  it('labels a failure with its catalogue code, anything else error, an abort aborted, a call left early stopped', async () => {
    const failing = (error: unknown) =>
      provider(async function* () {
        yield* [];
        throw error;
      });
    await assert.rejects(drain(failing(new ModelError('model_rate_limited', 'slow down', true)).stream(request())));
    await assert.rejects(drain(failing(new ModelError('made_up_by_a_script', 'x')).stream(request())));
    await assert.rejects(drain(failing(new Error('socket hang up')).stream(request())));
    const aborted = new AbortController();
    aborted.abort();
    await assert.rejects(drain(failing(new Error('aborted')).stream(request(aborted.signal))));
    for await (const event of provider(async function* () {
      yield { type: 'text_delta', delta: 'a' };
      yield { type: 'text_delta', delta: 'b' };
    }).stream(request())) {
      void event;
      break;
    }
    assert.equal(await calls('model_rate_limited'), 1);
    assert.equal(await calls('made_up_by_a_script'), 0, 'codes outside the catalogue stay out of the label set');
    assert.equal(await calls('error'), 2);
    assert.equal(await calls('aborted'), 1);
    assert.equal(await calls('stopped'), 1);
  });
});

describe('the Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(new URL('../../../docker/grafana/yuxi-dashboard.json', import.meta.url), 'utf8')) as {
    uid: string;
    title: string;
    templating: { list: { name: string; type: string; query: unknown }[] };
    panels: { type: string; title: string; datasource?: { type: string; uid: string }; targets?: { expr: string }[] }[];
  };
  const graphs = dashboard.panels.filter((p) => p.type !== 'row');
  const exprs = graphs.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

  it('is a dashboard whose panels query a Prometheus data source variable', () => {
    assert.ok(dashboard.uid && dashboard.title);
    const variable = dashboard.templating.list.find((v) => v.type === 'datasource');
    assert.equal(variable?.query, 'prometheus');
    assert.ok(graphs.length >= 15);
    for (const panel of graphs) {
      assert.deepEqual(panel.datasource, { type: 'prometheus', uid: `\${${variable!.name}}` }, panel.title);
      assert.ok((panel.targets ?? []).length > 0, `${panel.title} has queries`);
    }
  });

  it('charts every documented metric and no metric that does not exist', async () => {
    const names = new Set(new Metrics().definitions().map((d) => d.name));
    for (const name of names) assert.ok(exprs.some((e) => new RegExp(`\\b${name}(_bucket)?\\b`).test(e)), `a panel shows ${name}`);
    const worker = new Metrics();
    worker.register('worker');
    const exposed = parseExposition(await worker.scrape()).types;
    for (const used of exprs.flatMap((e) => e.match(/\byuxi_\w+/g) ?? [])) {
      const base = used.replace(/_bucket$/, '');
      assert.ok(names.has(base) || exposed.has(base), `${used} exists`);
    }
  });
});
