import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CommittedStep, HeldTurn } from '#libs/engine';
import type { ModelEvent } from '#libs/models';
import {
  boundedContent,
  boundedMessagesJson,
  chatAttributes,
  chatResponseAttributes,
  ChatTrace,
  executeToolAttributes,
  inputMessagesJson,
  invokeAgentAttributes,
  MAX_CONTENT_CHARS,
  newChatObservation,
  observeModelEvent,
  outputMessagesJson,
  providerName,
  runSpanPlan,
  toolType,
} from '#libs/runtime';
import { runSpanId } from '#libs/telemetry';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const STORED = { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` };

function held(over: { fresh?: boolean; resumeFromRunId?: string | null; steps?: CommittedStep[]; trace?: typeof STORED | undefined } = {}): HeldTurn {
  return {
    turn: { id: 'turn-1', sessionId: 'sess-1' },
    run: { id: 'run-2', model: 'scripted:echo', resumeFromRunId: over.resumeFromRunId ?? null, epoch: 7 },
    lease: { runId: 'run-2', owner: 'w', epoch: 7 },
    config: { agent_id: 'agent-1', model: 'scripted:echo', tool_approval_mode: 'never_ask', instructions: '', ...('trace' in over ? (over.trace ? { trace: over.trace } : {}) : { trace: STORED }) },
    steps: over.steps ?? [],
    fresh: over.fresh ?? true,
  } as unknown as HeldTurn;
}

function observe(events: ModelEvent[], content: boolean) {
  const observed = newChatObservation(content);
  for (const event of events) observeModelEvent(observed, event);
  return observed;
}

const ANSWER: ModelEvent[] = [
  { type: 'text_delta', delta: 'Hel' },
  { type: 'text_delta', delta: 'lo' },
  { type: 'tool_call', call: { call_id: 'call_1', name: 'search', arguments: '{"q":"x"}' } },
  { type: 'usage', usage: { input_tokens: 12, output_tokens: 5, cached_tokens: 0, total_tokens: 17 } },
  { type: 'finish', reason: 'tool_calls', id: 'chatcmpl-1', model: 'gpt-4o-2024' },
];

describe('trace spans: invoke_agent and the claim', () => {
  it('gives a fresh claim the span id derived from its run, with no links', () => {
    const plan = runSpanPlan(held());
    assert.deepEqual(plan, { kind: 'new', spanId: runSpanId('run-2'), links: [], resumedFrom: null });
  });

  it('links a takeover to the lost run by the id derived from that run', () => {
    const plan = runSpanPlan(held({ fresh: false, resumeFromRunId: 'run-1' }));
    assert.equal(plan.kind, 'takeover');
    assert.equal(plan.spanId, runSpanId('run-2'), 'the successor run is leased once: its own derived id');
    assert.equal(plan.links.length, 1);
    assert.deepEqual(plan.links[0]?.context, { traceId: TRACE_ID, spanId: runSpanId('run-1'), traceFlags: 1, isRemote: true });
    assert.deepEqual(plan.links[0]?.attributes, { 'yuxi.link.reason': 'takeover' });
    assert.equal(plan.resumedFrom, null);
    assert.equal(invokeAgentAttributes(held({ fresh: false, resumeFromRunId: 'run-1' }), plan.kind)['yuxi.run.takeover'], true);
  });

  it('reads a run after an answered waitpoint as a resume of that kind, linked to the run that waited', () => {
    const waitpoint: CommittedStep = { runId: 'run-1', kind: 'waitpoint', status: 'completed', ref: 'wp_1', output: { kind: 'approval' } } as unknown as CommittedStep;
    const plan = runSpanPlan(held({ fresh: false, resumeFromRunId: 'run-1', steps: [waitpoint] }));
    assert.equal(plan.kind, 'resume');
    assert.equal(plan.resumedFrom, 'approval');
    assert.deepEqual(plan.links[0]?.attributes, { 'yuxi.link.reason': 'resume' });
    // A waitpoint of an earlier run (the run before was then taken over) is no resume of this one.
    const older = { ...waitpoint, runId: 'run-0' } as CommittedStep;
    assert.equal(runSpanPlan(held({ fresh: false, resumeFromRunId: 'run-1', steps: [older] })).kind, 'takeover');
  });

  it('links nothing when the input stored no trace context (the lost run began a trace of its own)', () => {
    const plan = runSpanPlan(held({ fresh: false, resumeFromRunId: 'run-1', trace: undefined }));
    assert.equal(plan.kind, 'takeover');
    assert.deepEqual(plan.links, []);
  });

  it('names the agent, the model, the run and its fencing epoch on invoke_agent', () => {
    assert.deepEqual(invokeAgentAttributes(held(), 'new'), {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': 'agent-1',
      'gen_ai.agent.name': 'agent-1',
      'gen_ai.request.model': 'scripted:echo',
      'yuxi.session_id': 'sess-1',
      'yuxi.turn_id': 'turn-1',
      'yuxi.run_id': 'run-2',
      'yuxi.run.epoch': 7,
    });
  });
});

describe('trace spans: chat', () => {
  it('names the provider as the conventions do, the service’s own under yuxi.', () => {
    assert.equal(providerName('openai'), 'openai');
    assert.equal(providerName('scripted'), 'yuxi.scripted');
    assert.deepEqual(chatAttributes('scripted', 'echo', 'summariser'), {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'yuxi.scripted',
      'gen_ai.request.model': 'echo',
      'yuxi.model.purpose': 'summariser',
    });
  });

  it('reads usage, finish reasons and the response from the events, and no content when capture is off', () => {
    const attributes = chatResponseAttributes(observe(ANSWER, false), 'gpt-4o');
    assert.deepEqual(attributes, {
      'gen_ai.response.model': 'gpt-4o-2024',
      'gen_ai.response.id': 'chatcmpl-1',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 5,
      'gen_ai.response.finish_reasons': ['tool_calls'],
    });
    assert.equal(Object.keys(attributes).some((key) => key.includes('messages')), false);
  });

  it('falls back to the request model and leaves out what the provider did not say', () => {
    assert.deepEqual(chatResponseAttributes(observe([{ type: 'text_delta', delta: 'x' }], false), 'echo'), { 'gen_ai.response.model': 'echo' });
  });

  it('writes the output message with its tool calls when content is captured', () => {
    const attributes = chatResponseAttributes(observe(ANSWER, true), 'gpt-4o');
    assert.deepEqual(JSON.parse(String(attributes['gen_ai.output.messages'])), [
      {
        role: 'assistant',
        parts: [
          { type: 'text', content: 'Hello' },
          { type: 'tool_call', id: 'call_1', name: 'search', arguments: '{"q":"x"}' },
        ],
        finish_reason: 'tool_calls',
      },
    ]);
  });

  it('writes the input messages in the conventions’ shape, images without their data', () => {
    const json = inputMessagesJson([
      { role: 'user', text: 'look', parts: [{ type: 'text', text: 'look' }, { type: 'image', url: 'data:image/png;base64,AAAA' }] },
      { role: 'assistant', text: '', tool_calls: [{ call_id: 'c1', name: 'f', arguments: '{}' }] },
      { role: 'tool', call_id: 'c1', output: 'done' },
    ]);
    assert.equal(json.includes('base64'), false);
    assert.deepEqual(JSON.parse(json), [
      { role: 'user', parts: [{ type: 'text', content: 'look' }, { type: 'blob', modality: 'image' }] },
      { role: 'assistant', parts: [{ type: 'tool_call', id: 'c1', name: 'f', arguments: '{}' }] },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: 'done' }] },
    ]);
  });

  it('bounds the messages: the latest that fit, or the last one cut, always valid JSON', () => {
    const big = 'x'.repeat(40_000);
    const messages = [1, 2, 3].map((n) => ({ role: 'user', parts: [{ type: 'text', content: `${n}${big}` }] }));
    const kept = JSON.parse(boundedMessagesJson(messages)) as { parts: { content: string }[] }[];
    assert.equal(kept.length, 1);
    assert.equal(kept[0]?.parts[0]?.content.startsWith('3'), true);
    const huge = boundedMessagesJson([{ role: 'user', parts: [{ type: 'text', content: '"'.repeat(MAX_CONTENT_CHARS * 2) }] }]);
    assert.ok(huge.length <= MAX_CONTENT_CHARS);
    assert.equal(Array.isArray(JSON.parse(huge)), true);
    assert.equal(outputMessagesJson('y'.repeat(MAX_CONTENT_CHARS * 2), [], 'length').length <= MAX_CONTENT_CHARS, true);
    assert.equal(boundedContent({ a: 'z'.repeat(MAX_CONTENT_CHARS) }).length, MAX_CONTENT_CHARS);
  });

  it('passes a stream through untouched while tracing is off, returning the stream underneath when its reader stops', async () => {
    let returned = false;
    async function* source(): AsyncGenerator<ModelEvent> {
      try {
        yield* ANSWER;
      } finally {
        returned = true;
      }
    }
    const seen: ModelEvent[] = [];
    for await (const event of new ChatTrace({ provider: 'openai', requestModel: 'gpt-4o', purpose: 'model', scope: undefined }).wrap(source())) {
      seen.push(event);
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, ANSWER.slice(0, 2));
    assert.equal(returned, true);
  });
});

describe('trace spans: execute_tool', () => {
  it('types a client tool as a function and the service’s tools as extensions, with their source label', () => {
    assert.equal(toolType('client'), 'function');
    assert.equal(toolType('mcp:docs'), 'extension');
    assert.deepEqual(executeToolAttributes('search', 'call_1', 'mcp:docs'), {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'search',
      'gen_ai.tool.call.id': 'call_1',
      'gen_ai.tool.type': 'extension',
      'yuxi.tool.source': 'mcp',
    });
    assert.equal(executeToolAttributes('shell', 'c', 'environment')['yuxi.tool.source'], 'environment');
  });
});
