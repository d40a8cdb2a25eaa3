import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, type FakeStep, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http } from '../support/http.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { SseStream } from '../support/sse.js';

// A failed turn's and run's `error` says whether submitting the input again is advised
// (`retryable`) and what the turn may have done before it failed (`side_effects`), derived from
// what it committed: nothing, output (messages, calls of tools that only read), or a tool that may
// have changed something (possible). Retrying is advised for a transient cause unless such a tool
// that is not idempotent ran.

/** More provider outages than the run retries (MODEL_MAX_RETRIES): the call fails `model_unavailable`, a transient cause. */
const OUTAGE: FakeStep[] = Array.from({ length: 8 }, () => ({ status: 503, body: { error: { message: 'overloaded', type: 'server_error' } } }));
const REFUSED: FakeStep = { status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } };

describe('classifiable failures', () => {
  let fake: FakeOpenAi;
  let mcp: TestMcpServer;

  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    mcp = await startMcpServer();
  });
  after(async () => {
    await fake.close();
    await mcp.close();
  });

  /** Runs one turn of a fresh agent with `tools` on `script`; the failed turn, its run, and the turn.failed / run.failed events. */
  async function failedTurn(tools: object[], script: FakeStep[], definition: object = {}) {
    const agent = await putAgent({ tools, ...definition });
    fake.script(fakeModel(agent.model), script);
    const session = await createSessionWith(agent.id, 'go');
    const stream = await SseStream.open(session.id);
    try {
      const failed = await stream.waitForType('agent.session.turn.failed', undefined, 60_000);
      const runFailed = stream.events.find((e) => e.type === 'yuxi.session.run.failed');
      const turn = (await http(`${API}/sessions/${session.id}/turns/${failed.data.turn_id}`)).body;
      const items = (await http(`${API}/sessions/${session.id}/turns/${failed.data.turn_id}/items?order=asc&limit=100`)).body;
      return { event: failed.data.turn.error, runEvent: runFailed?.data.run.error, turn, items };
    } finally {
      stream.close();
    }
  }

  /** The error as every read shows it: the turn, its runs, the items page's run summaries and both events. */
  function assertEverywhere(result: Awaited<ReturnType<typeof failedTurn>>, expected: { code: string; retryable: boolean; side_effects: string }) {
    const { turn, event, runEvent, items } = result;
    assert.equal(turn.status, 'failed');
    assert.deepEqual({ code: turn.error.code, retryable: turn.error.retryable, side_effects: turn.error.side_effects }, expected, JSON.stringify(turn.error));
    assert.equal(typeof turn.error.message, 'string');
    assert.deepEqual(event, turn.error, 'the turn.failed event carries the same error');
    assert.deepEqual(runEvent, turn.error, 'the run.failed event too');
    const failedRun = turn.yuxi.runs.at(-1);
    assert.deepEqual(failedRun.error, turn.error, 'and the failed run');
    const summary = items.yuxi.runs.find((run: any) => run.id === failedRun.id);
    // A run that wrote nothing (side_effects none) has no item on the page, so no summary there.
    if (expected.side_effects === 'none') return;
    assert.ok(summary, `the failed run's summary is on the items page: ${JSON.stringify(items.yuxi.runs)}`);
    assert.deepEqual(summary.error, turn.error, 'and its summary on an items page');
  }

  it('a failure before any step: nothing happened, retryable when the cause is transient', async () => {
    const outage = await failedTurn([], OUTAGE);
    assertEverywhere(outage, { code: 'model_unavailable', retryable: true, side_effects: 'none' });
    assert.deepEqual(outage.items.data.map((item: any) => item.role), ['user'], 'nothing but the user message');

    const refused = await failedTurn([], [REFUSED]);
    assertEverywhere(refused, { code: 'model_bad_request', retryable: false, side_effects: 'none' });
  });

  it('a failure after a message and a call of a builtin that only reads: output, still retryable for a transient cause', async () => {
    const result = await failedTurn(
      [{ type: 'builtin', name: 'calculator' }],
      [{ text: 'Let me compute that.', tool_calls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"2+3"}' }] }, ...OUTAGE],
    );
    assertEverywhere(result, { code: 'model_unavailable', retryable: true, side_effects: 'output' });
    const kinds = result.items.data.map((item: any) => item.type);
    assert.ok(kinds.includes('function_call_output'), `the calculator ran: ${kinds.join(', ')}`);
    assert.ok(result.items.data.some((item: any) => item.role === 'assistant'), 'a message was produced');
  });

  it('a failure after a message was streamed and the call failed: output', async () => {
    const agent = await putAgent({});
    // The message streams, then the same call fails: its shown text is kept as an incomplete item.
    fake.script(fakeModel(agent.model), [{ text: ['Partial', ' answer'], stall: true }]);
    const session = await createSessionWith(agent.id, 'go');
    const stream = await SseStream.open(session.id);
    try {
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' answer');
      // The stalled stream ends when the fake server closes its sockets: a failed model call.
      await fake.close();
      fake = await startFakeOpenAi(env.fakeOpenAiPort);
      const failed = await stream.waitForType('agent.session.turn.failed', undefined, 60_000);
      const turn = (await http(`${API}/sessions/${session.id}/turns/${failed.data.turn_id}`)).body;
      assert.equal(turn.error.side_effects, 'output', JSON.stringify(turn.error));
      assert.equal(turn.error.retryable, true, 'a connection lost mid-stream is transient, and only text was produced');
      const items = (await http(`${API}/sessions/${session.id}/turns/${failed.data.turn_id}/items?order=asc`)).body.data;
      assert.ok(items.some((item: any) => item.role === 'assistant' && item.status === 'incomplete'), 'the shown text is kept');
    } finally {
      stream.close();
    }
  });

  it('a failure after a tool with side effects ran: possible, and not retryable even for a transient cause', async () => {
    const result = await failedTurn(
      [{ type: 'mcp', server_label: 'calc', server_url: mcp.url, allowed_tools: ['record_side_effect'] }],
      [{ tool_calls: [{ id: 's1', name: 'record_side_effect', arguments: '{"note":"failure-classes"}' }] }, ...OUTAGE],
    );
    assertEverywhere(result, { code: 'model_unavailable', retryable: false, side_effects: 'possible' });
    assert.ok(
      mcp.effects.some((effect) => effect.note === 'failure-classes'),
      'the side effect happened',
    );

    // The same tool declared idempotent: its effect still happened (possible), but repeating it is
    // harmless, so the failure is retryable again.
    const idempotent = await failedTurn(
      [{ type: 'mcp', server_label: 'calc', server_url: mcp.url, allowed_tools: ['record_side_effect'], idempotent: true }],
      [{ tool_calls: [{ id: 's2', name: 'record_side_effect', arguments: '{"note":"failure-classes-idempotent"}' }] }, ...OUTAGE],
    );
    assertEverywhere(idempotent, { code: 'model_unavailable', retryable: true, side_effects: 'possible' });
    assert.ok(mcp.effects.some((effect) => effect.note === 'failure-classes-idempotent'), 'the idempotent tool\'s effect happened too');
  });

  it('a failure after a coordination call created a member: possible, not retryable (the member keeps working; a retry would create another)', async () => {
    const member = await putAgent({ model: 'scripted:echo' });
    const result = await failedTurn(
      [],
      [{ tool_calls: [{ id: 'k1', name: 'create_subagent', arguments: JSON.stringify({ task: 'hello', name: 'helper', agent_id: member.id }) }] }, ...OUTAGE],
      { multi_agent: { enabled: true, max_concurrent_subagents: 3, agents: [member.id] } },
    );
    assertEverywhere(result, { code: 'model_unavailable', retryable: false, side_effects: 'possible' });
    const output = result.items.data.find((item: any) => item.type === 'function_call_output' && item.call_id === 'k1');
    assert.ok(output, `the create_subagent call has its result: ${JSON.stringify(result.items.data.map((item: any) => item.type))}`);
    assert.match(output.output, /"status":"queued"/, 'the member was created');
  });
});
