import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OUTCOME_UNKNOWN, planNextStep, type ToolPolicy, toModelMessages, toolPolicy, type TurnBudget } from '#libs/runtime';
import type { CommittedStep, ItemEntity, ToolCallSpec } from '#libs/engine';

// The step executor's decisions, from committed steps alone: no database, no model, no tools.
const POLICY: ToolPolicy = {
  executorOf: (name) => ({ add: 'server', ask_user: 'user', lookup: 'client', risky: 'server', once: 'server' })[name] as 'server' | 'user' | 'client' | undefined ?? null,
  needsApproval: (name) => name === 'risky',
  idempotent: (name) => name !== 'once',
  checkArguments: (call) => (call.arguments.startsWith('{') ? { ok: true, value: JSON.parse(call.arguments) as Record<string, unknown> } : { ok: false, error: `Invalid arguments for ${call.name}` }),
};
const call = (call_id: string, name: string, args = '{}'): ToolCallSpec => ({ call_id, name, arguments: args });
const model = (calls: ToolCallSpec[], text = ''): CommittedStep => ({ runId: 'r1', kind: 'model_call', status: 'completed', ref: null, output: { text, tool_calls: calls } });
const result = (id: string): CommittedStep => ({ runId: 'r1', kind: 'tool_call', status: 'completed', ref: id, output: { success: true, output: 'x' } });
const started = (id: string): CommittedStep => ({ runId: 'r1', kind: 'tool_call', status: 'started', ref: id, output: {} });

describe('step plan', () => {
  it('calls the model when nothing is committed, and again once every call has a result', () => {
    assert.deepEqual(planNextStep([], POLICY), { action: 'call_model' });
    assert.deepEqual(planNextStep([model([call('c1', 'add')]), result('c1')], POLICY), { action: 'call_model' });
    assert.deepEqual(planNextStep([{ runId: 'r1', kind: 'model_call', status: 'failed', ref: null, output: {} }], POLICY), { action: 'call_model' });
  });

  it('settles a stored final answer instead of asking the model again', () => {
    assert.deepEqual(planNextStep([model([call('c1', 'add')]), result('c1'), { ...model([], 'done'), runId: 'r2' }], POLICY), {
      action: 'settle',
      text: 'done',
      fromRunId: 'r2',
    });
  });

  it('executes a server call, never one whose result is stored', () => {
    assert.deepEqual(planNextStep([model([call('c1', 'add'), call('c2', 'add')])], POLICY), { action: 'execute', call: call('c1', 'add'), args: {}, started: false });
    assert.deepEqual(planNextStep([model([call('c1', 'add'), call('c2', 'add')]), result('c1')], POLICY), { action: 'execute', call: call('c2', 'add'), args: {}, started: false });
  });

  it('re-runs a started call without a result only when the tool is idempotent', () => {
    assert.deepEqual(planNextStep([model([call('c1', 'add')]), started('c1')], POLICY), { action: 'execute', call: call('c1', 'add'), args: {}, started: true });
    assert.deepEqual(planNextStep([model([call('c1', 'once')]), started('c1')], POLICY), {
      action: 'record',
      call: call('c1', 'once'),
      outcome: { success: false, output: OUTCOME_UNKNOWN },
      started: true,
    });
  });

  it('answers invalid arguments and unknown tools with an error output, without running anything', () => {
    assert.deepEqual(planNextStep([model([call('c1', 'add', 'nope')])], POLICY), {
      action: 'record',
      call: call('c1', 'add', 'nope'),
      outcome: { success: false, output: 'Invalid arguments for add' },
      started: false,
    });
    assert.deepEqual(planNextStep([model([call('c1', 'ghost')])], POLICY), {
      action: 'record',
      call: call('c1', 'ghost'),
      outcome: { success: false, output: 'Unknown tool ghost' },
      started: false,
    });
  });

  it('waits for approval first, then questions, then client tools, while runnable calls go ahead', () => {
    const calls = [call('c1', 'lookup'), call('c2', 'ask_user'), call('c3', 'risky'), call('c4', 'add')];
    assert.deepEqual(planNextStep([model(calls)], POLICY), { action: 'execute', call: call('c4', 'add'), args: {}, started: false });
    assert.deepEqual(planNextStep([model(calls), result('c4')], POLICY), { action: 'wait', kind: 'approval', calls: [call('c3', 'risky')] });
    const approved: CommittedStep = { runId: 'r1', kind: 'waitpoint', status: 'completed', ref: 'w1', output: { response: { type: 'approval', decisions: [{ call_id: 'c3', decision: 'approve' }] } } };
    assert.deepEqual(planNextStep([model(calls), result('c4'), approved], POLICY), { action: 'execute', call: call('c3', 'risky'), args: {}, started: false });
    assert.deepEqual(planNextStep([model(calls), result('c4'), approved, result('c3')], POLICY), { action: 'wait', kind: 'question', calls: [call('c2', 'ask_user')] });
    const answered: CommittedStep = { runId: 'r2', kind: 'waitpoint', status: 'completed', ref: 'w2', output: { response: { type: 'answer', answers: [{ question_id: 'c2', answer: ['a', 'b'] }] } } };
    assert.deepEqual(planNextStep([model(calls), result('c4'), approved, result('c3'), answered], POLICY), {
      action: 'record',
      call: call('c2', 'ask_user'),
      outcome: { success: true, output: 'a, b' },
      started: false,
    });
    assert.deepEqual(planNextStep([model(calls), result('c4'), approved, result('c3'), answered, result('c2')], POLICY), {
      action: 'wait',
      kind: 'client_tool',
      calls: [call('c1', 'lookup')],
    });
  });

  it('records a rejection with the user\'s message instead of running the call', () => {
    const rejected: CommittedStep = {
      runId: 'r1',
      kind: 'waitpoint',
      status: 'completed',
      ref: 'w1',
      output: { response: { type: 'approval', decisions: [{ call_id: 'c1', decision: 'reject', message: 'not today' }] } },
    };
    assert.deepEqual(planNextStep([model([call('c1', 'risky')]), rejected], POLICY), {
      action: 'record',
      call: call('c1', 'risky'),
      outcome: { success: false, output: 'The user rejected this call of risky: not today' },
      started: false,
    });
  });
});

describe('step plan: per-turn limits', () => {
  const budget = (spent: Partial<TurnBudget>): TurnBudget => ({ maxModelCalls: 2, maxToolCalls: 2, modelCalls: 0, toolCalls: 0, ...spent });

  it('fails the turn instead of a model call beyond its limit', () => {
    assert.deepEqual(planNextStep([], POLICY, budget({ modelCalls: 1 })), { action: 'call_model' });
    assert.deepEqual(planNextStep([], POLICY, budget({ modelCalls: 2 })), { action: 'fail', code: 'turn_model_call_limit', message: 'The turn reached its limit of 2 model calls' });
  });

  it('fails the turn instead of a new server call beyond its limit; a started call and a recorded result spend nothing new', () => {
    const limit = { action: 'fail', code: 'turn_tool_call_limit', message: 'The turn reached its limit of 2 tool calls' };
    assert.deepEqual(planNextStep([model([call('c1', 'add')])], POLICY, budget({ toolCalls: 2 })), limit);
    assert.equal(planNextStep([model([call('c1', 'add')])], POLICY, budget({ toolCalls: 1 })).action, 'execute');
    assert.equal(planNextStep([model([call('c1', 'add')]), started('c1')], POLICY, budget({ toolCalls: 2 })).action, 'execute');
    assert.equal(planNextStep([model([call('c1', 'add', 'nope')])], POLICY, budget({ toolCalls: 2 })).action, 'record');
  });

  it('fails the turn instead of a waitpoint whose calls would pass the limit', () => {
    const calls = [call('c1', 'lookup'), call('c2', 'lookup')];
    assert.equal(planNextStep([model(calls)], POLICY, budget({})).action, 'wait');
    assert.equal(planNextStep([model(calls)], POLICY, budget({ toolCalls: 1 })).action, 'fail');
  });

  it('settles a stored answer whatever was spent', () => {
    assert.equal(planNextStep([model([], 'done')], POLICY, budget({ modelCalls: 2, toolCalls: 2 })).action, 'settle');
  });
});

describe('tool policy', () => {
  const tools = [
    { name: 'add', description: '', parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] }, executor: 'server' as const, requiresApproval: false, idempotent: true, sideEffects: true, source: 'mcp:m' },
    { name: 'wipe', description: '', parameters: { type: 'object' }, executor: 'server' as const, requiresApproval: true, idempotent: false, sideEffects: true, source: 'mcp:m' },
    { name: 'lookup', description: '', parameters: { type: 'object' }, executor: 'client' as const, requiresApproval: false, idempotent: false, sideEffects: true, source: 'client' },
  ];

  it('asks per the approval mode, the tool flag and the session trust', () => {
    assert.equal(toolPolicy(tools, 'default', []).needsApproval('add'), false);
    assert.equal(toolPolicy(tools, 'default', []).needsApproval('wipe'), true);
    assert.equal(toolPolicy(tools, 'always_ask', []).needsApproval('add'), true);
    assert.equal(toolPolicy(tools, 'always_trust', []).needsApproval('wipe'), false);
    assert.equal(toolPolicy(tools, 'default', ['wipe']).needsApproval('wipe'), false);
    assert.equal(toolPolicy(tools, 'always_ask', []).needsApproval('lookup'), false, 'client tools are never approved by the user');
  });

  it('validates arguments against the declared schema', () => {
    const policy = toolPolicy(tools, 'default', []);
    assert.deepEqual(policy.checkArguments(call('c', 'add', '{"a":1}')), { ok: true, value: { a: 1 } });
    const invalid = (json: string): string => {
      const checked = policy.checkArguments(call('c', 'add', json));
      return checked.ok ? '' : checked.error;
    };
    assert.match(invalid('{"a":"x"}'), /add/);
    assert.match(invalid('not json'), /add/);
  });
});

describe('model context', () => {
  const item = (type: string, role: string | null, content: ItemEntity['content'], status: ItemEntity['status'] = 'completed'): ItemEntity => ({
    id: 'i',
    sessionId: 's',
    turnId: 't',
    runId: 'r',
    inputId: null,
    seq: '1',
    type,
    role,
    status,
    content,
    phase: null,
    tokens: null,
    createdAt: new Date(0),
  });

  it('attaches calls to the assistant message before them and outputs as tool messages', () => {
    const messages = toModelMessages([
      item('message', 'user', [{ type: 'input_text', text: 'hi' }]),
      item('message', 'assistant', [{ type: 'output_text', text: 'let me check' }]),
      item('function_call', null, [{ type: 'function_call', call_id: 'c1', name: 'add', arguments: '{}' }]),
      item('function_call_output', null, [{ type: 'function_call_output', call_id: 'c1', output: '3' }]),
    ]);
    assert.deepEqual(messages, [
      { role: 'user', text: 'hi' },
      { role: 'assistant', text: 'let me check', tool_calls: [{ call_id: 'c1', name: 'add', arguments: '{}' }] },
      { role: 'tool', call_id: 'c1', output: '3' },
    ]);
  });

  it('leaves out calls without outputs and outputs without calls (a window can cut a pair)', () => {
    const messages = toModelMessages([
      item('function_call_output', null, [{ type: 'function_call_output', call_id: 'c0', output: 'orphan' }]),
      item('message', 'user', [{ type: 'input_text', text: 'hi' }]),
      item('function_call', null, [{ type: 'function_call', call_id: 'c1', name: 'add', arguments: '{}' }]),
      item('message', 'assistant', [{ type: 'output_text', text: 'partial' }], 'in_progress'),
    ]);
    assert.deepEqual(messages, [{ role: 'user', text: 'hi' }]);
  });
  it('never reads a budget waitpoint\'s decision as the approval of a tool call whose id is "budget"', () => {
    const budgetApproved: CommittedStep = {
      runId: 'r1',
      kind: 'waitpoint',
      status: 'completed',
      ref: 'w1',
      output: { kind: 'budget', response: { type: 'approval', decisions: [{ call_id: 'budget', decision: 'approve' }] } },
    };
    const calls = [call('budget', 'risky')];
    assert.deepEqual(planNextStep([model(calls), budgetApproved], POLICY), { action: 'wait', kind: 'approval', calls });
    const approved: CommittedStep = { ...budgetApproved, ref: 'w2', output: { kind: 'approval', response: { type: 'approval', decisions: [{ call_id: 'budget', decision: 'approve' }] } } };
    assert.deepEqual(planNextStep([model(calls), budgetApproved, approved], POLICY), { action: 'execute', call: call('budget', 'risky'), args: {}, started: false });
  });
});
