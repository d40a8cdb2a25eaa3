import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http, postEvent, sendMessage } from '../support/http.js';
import { call, newProductUser } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

const PRICES = '/api/v1/admin/model-prices';
const price = (model: string, body: Record<string, unknown>) => http(`${PRICES}/${encodeURIComponent(model)}`, { method: 'PUT', body });
const turnOf = async (sessionId: string, turnId: string): Promise<any> => (await http(`${API}/sessions/${sessionId}/turns/${turnId}`)).body;
const sessionUsage = async (sessionId: string): Promise<any> => (await http(`${API}/sessions/${sessionId}`)).body.yuxi.usage;
const usage = (fields: Partial<Record<string, number | null>>) => ({
  input_tokens: 0,
  output_tokens: 0,
  cached_tokens: 0,
  reasoning_tokens: 0,
  total_tokens: 0,
  model_calls: 0,
  tool_calls: 0,
  cost_microusd: null,
  ...fields,
});

// The usage ledger through the public API (README "Usage and prices"): every model and tool call
// of a turn counted on its run, its turn and its session, each model call priced at the price in
// force when it was made, and the administrators' price routes.
describe('usage ledger and model prices', () => {
  let fake: FakeOpenAi;
  const streams: SseStream[] = [];
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await fake.close();
  });

  async function open(sessionId: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    return stream;
  }

  it('counts a turn\'s model and tool calls, tokens and cost on its run, turn and session, each call at the price in force', async () => {
    const { id, model } = await putAgent({ instructions: 'Use the calculator.', tools: [{ type: 'builtin', name: 'calculator' }] });
    // USD per million tokens is micro-dollars per token.
    assert.equal((await price(model, { input_per_mtok_usd: 2, output_per_mtok_usd: 8, cached_input_per_mtok_usd: 1, reasoning_per_mtok_usd: 16 })).status, 201);
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"6*7"}' }], usage: { prompt_tokens: 100, completion_tokens: 10, cached: 40, reasoning: 4 } },
      { text: 'It is 42.', usage: { prompt_tokens: 120, completion_tokens: 5 } },
    ]);
    const session = await createSessionWith(id, 'What is 6*7?');
    const stream = await open(session.id);
    const first = await stream.waitForType('agent.session.turn.completed', undefined, 30_000);
    // (100-40)*2 + 40*1 + (10-4)*8 + 4*16 = 272, then 120*2 + 5*8 = 280.
    const firstUsage = usage({ input_tokens: 220, output_tokens: 15, cached_tokens: 40, reasoning_tokens: 4, total_tokens: 235, model_calls: 2, tool_calls: 1, cost_microusd: 552 });
    assert.deepEqual(first.data.turn.yuxi.usage, firstUsage);
    const detail = await turnOf(session.id, first.data.turn_id);
    assert.deepEqual(detail.yuxi.usage, firstUsage);
    assert.equal(detail.yuxi.runs.length, 1);
    assert.deepEqual(detail.yuxi.runs[0].usage, firstUsage, 'the run that made every call');
    assert.deepEqual(await sessionUsage(session.id), firstUsage);
    assert.equal((await http(`${API}/sessions/${session.id}`)).body.usage, null, 'the upstream field stays null');

    // A new price applies to the calls made after it; the first turn keeps what it cost.
    assert.equal((await price(model, { input_per_mtok_usd: 4, output_per_mtok_usd: 8 })).status, 200);
    fake.script(fakeModel(model), [{ text: 'Again 42.', usage: { prompt_tokens: 50, completion_tokens: 5, cached: 10 } }]);
    assert.equal((await sendMessage(session.id, 'Once more?')).status, 202);
    const second = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== first.data.turn_id, 30_000);
    // No cached price now: cached input at the input price, 50*4 + 5*8.
    assert.deepEqual(second.data.turn.yuxi.usage, usage({ input_tokens: 50, output_tokens: 5, cached_tokens: 10, total_tokens: 55, model_calls: 1, cost_microusd: 240 }));
    assert.equal((await turnOf(session.id, first.data.turn_id)).yuxi.usage.cost_microusd, 552);

    // Without a price a call has no cost: it adds tokens and calls, never cost.
    assert.equal((await http(`${PRICES}/${encodeURIComponent(model)}`, { method: 'DELETE' })).status, 200);
    fake.script(fakeModel(model), [{ text: 'Free 42.', usage: { prompt_tokens: 7, completion_tokens: 1 } }]);
    assert.equal((await sendMessage(session.id, 'And now?')).status, 202);
    const third = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ![first.data.turn_id, second.data.turn_id].includes(e.data.turn_id), 30_000);
    assert.deepEqual(third.data.turn.yuxi.usage, usage({ input_tokens: 7, output_tokens: 1, total_tokens: 8, model_calls: 1 }));
    assert.deepEqual(
      await sessionUsage(session.id),
      usage({ input_tokens: 277, output_tokens: 21, cached_tokens: 50, reasoning_tokens: 4, total_tokens: 298, model_calls: 4, tool_calls: 1, cost_microusd: 792 }),
    );
  });

  it('counts a compaction\'s summariser call as a model call of its turn, priced like any other', async () => {
    const { id, model } = await putAgent({ instructions: 'Be brief.', context: { compaction: { mode: 'manual' } } });
    await price(model, { input_per_mtok_usd: 1, output_per_mtok_usd: 10 });
    fake.script(fakeModel(model), [
      { text: 'Hello there.', usage: { prompt_tokens: 20, completion_tokens: 3 } },
      { text: 'The user said hello.', usage: { prompt_tokens: 60, completion_tokens: 6 } },
    ]);
    const session = await createSessionWith(id, 'hello');
    const stream = await open(session.id);
    const first = await stream.waitForType('agent.session.turn.completed', undefined, 30_000);
    assert.equal((await postEvent(session.id, { type: 'yuxi.session.input.compact' })).status, 202);
    const compacted = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== first.data.turn_id, 30_000);
    assert.deepEqual(compacted.data.turn.yuxi.usage, usage({ input_tokens: 60, output_tokens: 6, total_tokens: 66, model_calls: 1, cost_microusd: 120 }));
    assert.deepEqual(await sessionUsage(session.id), usage({ input_tokens: 80, output_tokens: 9, total_tokens: 89, model_calls: 2, cost_microusd: 170 }));
  });

  it('lists, sets and removes prices for administrators only, and refuses bad input naming each field', async () => {
    const model = `openai:price-${Date.now()}`;
    const set = await price(model, { input_per_mtok_usd: 0.15, output_per_mtok_usd: 0.6, cached_input_per_mtok_usd: 0.075 });
    assert.equal(set.status, 201);
    assert.deepEqual({ ...set.body, updated_at: 0 }, { object: 'model_price', model, input_per_mtok_usd: 0.15, output_per_mtok_usd: 0.6, cached_input_per_mtok_usd: 0.075, reasoning_per_mtok_usd: null, updated_at: 0 });
    const listed = await http(PRICES);
    assert.equal(listed.status, 200);
    assert.ok(listed.body.data.some((p: any) => p.model === model && p.output_per_mtok_usd === 0.6));

    const fields = async (target: string, body: unknown): Promise<string[]> => {
      const res = await http(`${PRICES}/${encodeURIComponent(target)}`, { method: 'PUT', body });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error.code, 'validation_failed');
      return res.body.error.details.fields.map((f: any) => f.field);
    };
    assert.deepEqual(await fields(model, { output_per_mtok_usd: 1 }), ['input_per_mtok_usd']);
    assert.deepEqual(await fields(model, { input_per_mtok_usd: -1, output_per_mtok_usd: 1e9 }), ['input_per_mtok_usd', 'output_per_mtok_usd']);
    assert.deepEqual(await fields(model, { input_per_mtok_usd: 1, output_per_mtok_usd: 1, reasoning_per_mtok_usd: null, currency: 'EUR' }), ['currency', 'reasoning_per_mtok_usd']);
    assert.deepEqual(await fields('no-provider', { input_per_mtok_usd: 1, output_per_mtok_usd: 1 }), ['model']);
    assert.deepEqual(await fields(`openai:${'x'.repeat(300)}`, { input_per_mtok_usd: 1, output_per_mtok_usd: 1 }), ['model']);

    const { caller } = await newProductUser('price reader');
    assert.equal((await call(caller, PRICES)).status, 403);
    assert.equal((await call(caller, `${PRICES}/${encodeURIComponent(model)}`, { method: 'PUT', body: { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } })).status, 403);
    assert.equal((await call(caller, `${PRICES}/${encodeURIComponent(model)}`, { method: 'DELETE' })).status, 403);

    const audit = await http(`/api/v1/admin/audit?limit=20`);
    assert.ok(audit.body.data.some((e: any) => e.action === 'model_price.set' && e.target.id === model), 'the change is audited');
    assert.deepEqual((await http(`${PRICES}/${encodeURIComponent(model)}`, { method: 'DELETE' })).body, { object: 'model_price.deleted', model, deleted: true });
    assert.equal((await http(`${PRICES}/${encodeURIComponent(model)}`, { method: 'DELETE' })).status, 404);
  });
});
