import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CommittedStep, HeldTurn } from '#libs/engine';
import { boundedToolName, claimedContexts, consumedInputs, consumedLinks, executeToolSpanName, executeToolStart, MAX_TOOL_NAME_CHARS } from '#libs/runtime';

const TRACE_A = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACE_B = '0af7651916cd43dd8448eb211c80319c';
const OWN = { traceparent: `00-${TRACE_A}-00f067aa0ba902b7-01` };
const OTHER = { traceparent: `00-${TRACE_B}-b7ad6b7169203331-01`, tracestate: 'k=v' };
const SAME_TRACE = { traceparent: `00-${TRACE_A}-1111111111111111-01` };

type Claimed = Pick<HeldTurn, 'fresh' | 'run' | 'steps' | 'inputTraces'>;
function claimed(over: Partial<Claimed> & { resumeFromRunId?: string }): Claimed {
  return { fresh: over.fresh ?? true, run: { resumeFromRunId: over.resumeFromRunId ?? null } as HeldTurn['run'], steps: over.steps ?? [], inputTraces: over.inputTraces };
}

describe('links of a run to the inputs it consumed', () => {
  it('links each input stored with a context other than the run’s own, named by its id', () => {
    const links = consumedLinks(OWN, consumedInputs([
      { inputId: 'in-1', trace: OWN },
      { inputId: 'in-2', trace: OTHER },
      { inputId: 'in-3', trace: SAME_TRACE },
    ]));
    assert.deepEqual(links, [
      { context: { traceId: TRACE_B, spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true }, attributes: { 'yuxi.link.reason': 'input', 'yuxi.input_id': 'in-2' } },
      { context: { traceId: TRACE_A, spanId: '1111111111111111', traceFlags: 1, isRemote: true }, attributes: { 'yuxi.link.reason': 'input', 'yuxi.input_id': 'in-3' } },
    ]);
  });

  it('links nothing for inputs without a context, with an invalid one, or with the run’s own', () => {
    const invalid = [{ traceparent: 'garbage' }, { traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` }, { traceparent: `00-${TRACE_B}-${'0'.repeat(16)}-01` }];
    const inputs = [{ inputId: 'a', trace: undefined }, { inputId: 'b', trace: OWN }, ...invalid.map((trace, i) => ({ inputId: `x${i}`, trace }))];
    assert.deepEqual(consumedLinks(OWN, consumedInputs(inputs)), []);
    assert.deepEqual(consumedInputs(undefined), []);
  });

  it('links every stored context when the run has none of its own', () => {
    assert.equal(consumedLinks(undefined, consumedInputs([{ inputId: 'in-1', trace: OTHER }])).length, 1);
  });

  it('a claim consumed its batch; a resume, the response that resolved the waitpoint of the run before', () => {
    assert.deepEqual(claimedContexts(claimed({ inputTraces: [{ inputId: 'in-1', trace: OTHER }] })), [{ trace: OTHER, attributes: { 'yuxi.input_id': 'in-1' } }]);
    const waitpoint = { runId: 'run-1', kind: 'waitpoint', status: 'completed', ref: 'wp_1', output: { kind: 'question', trace: OTHER } } as unknown as CommittedStep;
    const resumed = claimedContexts(claimed({ fresh: false, resumeFromRunId: 'run-1', steps: [waitpoint] }));
    assert.deepEqual(resumed, [{ trace: OTHER, attributes: { 'yuxi.waitpoint.id': 'wp_1' } }]);
    assert.deepEqual(consumedLinks(OWN, resumed)[0]?.attributes, { 'yuxi.link.reason': 'input', 'yuxi.waitpoint.id': 'wp_1' });
    // A waitpoint of an earlier run, or one resolved with no context stored (tracing was off), gives none.
    assert.deepEqual(claimedContexts(claimed({ fresh: false, resumeFromRunId: 'run-9', steps: [waitpoint] })), []);
    const untraced = { ...waitpoint, output: { kind: 'question' } } as CommittedStep;
    assert.deepEqual(claimedContexts(claimed({ fresh: false, resumeFromRunId: 'run-1', steps: [untraced] })), []);
  });
});

describe('the execute_tool span of a model-chosen tool name', () => {
  it('bounds the name in the span name and gen_ai.tool.name', () => {
    const long = 't'.repeat(MAX_TOOL_NAME_CHARS * 4);
    assert.equal(boundedToolName(long).length, MAX_TOOL_NAME_CHARS);
    assert.equal(executeToolSpanName(long), `execute_tool ${'t'.repeat(MAX_TOOL_NAME_CHARS)}`);
    assert.equal(executeToolStart(long, 'call_1', 'mcp', {})['gen_ai.tool.name'], 't'.repeat(MAX_TOOL_NAME_CHARS));
    assert.equal(executeToolSpanName('get_weather'), 'execute_tool get_weather');
  });

  it('strips control characters (U+0000 would fail the span store\'s jsonb) and never cuts a surrogate pair in half', () => {
    assert.equal(boundedToolName('get\u0000_wea\nther\u007f\u0085'), 'get_weather');
    const emoji = `${'t'.repeat(MAX_TOOL_NAME_CHARS - 1)}\u{1F600}`;
    assert.equal(boundedToolName(emoji), 't'.repeat(MAX_TOOL_NAME_CHARS - 1));
  });
});
