import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelError } from '#libs/models';
import {
  decide,
  type Interruption,
  interruptionOf,
  LeaseLostError,
  type RunCommand,
  type RunFact,
  type RunHistory,
  ShuttingDownError,
  spent,
  stepsSinceInput,
  type ToolPolicy,
  TurnCancelledError,
  TurnLimitError,
} from '#libs/runtime';
import type { BudgetReached, CommittedStep, ToolCallSpec } from '#libs/engine';

// The run's decider: from committed history and what arrived, the next command. No database, no model, no tools.
const POLICY: ToolPolicy = {
  executorOf: (name) => ({ add: 'server', lookup: 'client', spawn: 'cooperation', risky: 'server' })[name] as 'server' | 'client' | 'cooperation' | undefined ?? null,
  needsApproval: (name) => name === 'risky',
  idempotent: () => true,
  checkArguments: (call) => ({ ok: true, value: JSON.parse(call.arguments) as Record<string, unknown> }),
};
const call = (call_id: string, name = 'add'): ToolCallSpec => ({ call_id, name, arguments: '{}' });
const modelStep = (calls: ToolCallSpec[], text = ''): CommittedStep => ({ runId: 'r1', kind: 'model_call', status: 'completed', ref: null, output: { text, tool_calls: calls } });
const toolResult = (id: string): CommittedStep => ({ runId: 'r1', kind: 'tool_call', status: 'completed', ref: id, output: { success: true, output: 'x' } });
const toolStarted = (id: string): CommittedStep => ({ runId: 'r1', kind: 'tool_call', status: 'started', ref: id, output: {} });
const step = (committed: CommittedStep): RunFact => ({ type: 'step', step: committed });
const answer = (toolCalls: ToolCallSpec[], text = 'hi', yielded = false) => ({ yielded, text, toolCalls, usage: null, finishReason: 'stop', requestJson: null });
const called = (toolCalls: ToolCallSpec[], options: { retry?: boolean; yielded?: boolean } = {}): RunFact => ({
  type: 'model_called',
  result: answer(toolCalls, 'hi', options.yielded ?? false),
  retry: options.retry ?? false,
});
const SENT = { messages: [], measure: { baseTokens: 0, summaryTokens: 0, pinnedTokens: 0, latestUserTokens: 0, itemTokens: [], driftTokens: 0, lastCompactionTokensAfter: null }, items: [], attachments: new Map(), compaction: null, pinned: null, latestUserIndex: null };
const TOO_LARGE = { code: 'context_window_exceeded', message: 'too long even after compaction' };
const overflowed = (retry: boolean, shown = false): RunFact => ({
  type: 'model_overflowed',
  retry,
  shown,
  sent: SENT,
  cause: new ModelError('model_context_length_exceeded', 'too long'),
  error: { code: 'model_context_length_exceeded', message: 'too long' },
  tooLarge: TOO_LARGE,
});

function history(facts: RunFact[], options: Partial<RunHistory> = {}): RunHistory {
  return { kind: 'message', policy: POLICY, limits: { maxModelCalls: 10, maxToolCalls: 10 }, budgeted: false, spentBefore: { modelCalls: 0, toolCalls: 0 }, claimed: [], facts, ...options };
}

const CANCEL: Interruption = { kind: 'cancel' };
const close = (ending: Interruption): RunCommand => ({ kind: 'close', ending });
const failed = (code: string, message: string): RunCommand => close({ kind: 'failed', error: { code, message } });

describe('run decider: steers', () => {
  const cases: { name: string; history: RunHistory; expected: RunCommand }[] = [
    { name: 'before the first model call of a fresh run only an announced steer is looked for', history: history([]), expected: { kind: 'look_for_steers', lookup: 'announced' } },
    {
      name: 'after a tool round the steer queue is read',
      history: history([called([call('c1')]), step(modelStep([call('c1')])), step(toolResult('c1'))]),
      expected: { kind: 'look_for_steers', lookup: 'pending' },
    },
    { name: 'a run that took a turn over with steps reads the queue', history: history([], { claimed: [modelStep([call('c1')]), toolResult('c1')] }), expected: { kind: 'look_for_steers', lookup: 'pending' } },
    { name: 'no steer waiting: the model is called', history: history([{ type: 'steers_looked', waiting: false }]), expected: { kind: 'call_model', retryWith: null } },
    { name: 'a steer waiting at the boundary joins, nothing shown kept', history: history([{ type: 'steers_looked', waiting: true }]), expected: { kind: 'join_steers', keepShown: false } },
    { name: 'a steer arriving mid-stream joins with what the stream showed', history: history([called([], { yielded: true })]), expected: { kind: 'join_steers', keepShown: true } },
    {
      name: 'after a join the next run starts from its new input: no steps, so only an announced steer',
      history: history([step(toolResult('c1')), { type: 'steers_looked', waiting: true }, { type: 'steers_joined' }], { claimed: [modelStep([call('c1')])] }),
      expected: { kind: 'look_for_steers', lookup: 'announced' },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(decide(c.history), c.expected));

  it('counts only the steps since the last join', () => {
    const joined = history([step(toolResult('c1')), { type: 'steers_joined' }, step(toolResult('c2'))], { claimed: [modelStep([call('c1')])] });
    assert.deepEqual(stepsSinceInput(joined), [toolResult('c2')]);
    assert.deepEqual(stepsSinceInput(history([step(toolResult('c1'))], { claimed: [modelStep([call('c1')])] })), [modelStep([call('c1')]), toolResult('c1')]);
  });
});

describe('run decider: cancel, shutdown, lost lease', () => {
  const arrivals: Interruption[] = [CANCEL, { kind: 'shutdown' }, { kind: 'lease_lost' }, { kind: 'failed', error: { code: 'turn_timeout', message: 'late' } }];
  for (const arrived of arrivals) {
    it(`${arrived.kind}: heard at a step boundary, it ends the run`, () => {
      assert.deepEqual(decide(history([]), arrived), close(arrived));
      assert.deepEqual(decide(history([step(toolResult('c1'))], { claimed: [modelStep([call('c1')])] }), arrived), close(arrived));
      assert.deepEqual(decide(history([{ type: 'steers_joined' }]), arrived), close(arrived));
    });
  }

  it('a command\'s follow-up goes ahead (its own I/O hears the abort): the call after a look, the answer, the retry', () => {
    assert.deepEqual(decide(history([{ type: 'steers_looked', waiting: false }]), CANCEL), { kind: 'call_model', retryWith: null });
    assert.deepEqual(decide(history([called([])]), CANCEL), { kind: 'settle', answer: { from: 'model', result: answer([]) } });
    assert.deepEqual(decide(history([overflowed(false)]), CANCEL).kind, 'compact_after_overflow');
  });

  it('reads what arrived: the abort\'s reason first, a lost lease whichever said it, then the error', () => {
    const aborted = (reason: unknown): AbortSignal => AbortSignal.abort(reason);
    const quiet = new AbortController().signal;
    const dbDown = Object.assign(new Error('connect'), { code: 'ECONNREFUSED' });
    const table: [AbortSignal, unknown, Interruption][] = [
      [aborted(new TurnCancelledError()), new TurnCancelledError(), CANCEL],
      [aborted(new ShuttingDownError()), new Error('stream aborted'), { kind: 'shutdown' }],
      [aborted(new TurnCancelledError()), new LeaseLostError(), { kind: 'lease_lost' }],
      [quiet, new LeaseLostError(), { kind: 'lease_lost' }],
      [quiet, dbDown, { kind: 'database_unreachable' }],
      [aborted(new TurnLimitError('turn_timeout', 'too slow')), new Error('aborted'), { kind: 'failed', error: { code: 'turn_timeout', message: 'too slow' } }],
      [quiet, new ModelError('model_rate_limited', 'slow down'), { kind: 'failed', error: { code: 'model_rate_limited', message: 'slow down' } }],
    ];
    for (const [signal, error, expected] of table) assert.deepEqual(interruptionOf(signal, error), expected);
    const bug = new TypeError('boom');
    assert.deepEqual(interruptionOf(quiet, bug), { kind: 'failed', error: { code: 'run_failed', message: 'The run failed unexpectedly' }, unexpected: bug });
  });
});

describe('run decider: the budget, derived from history', () => {
  const limits = { maxModelCalls: 2, maxToolCalls: 2 };
  const modelLimit = failed('turn_model_call_limit', 'The turn reached its limit of 2 model calls');
  const toolLimit = failed('turn_tool_call_limit', 'The turn reached its limit of 2 tool calls');
  const cases: { name: string; history: RunHistory; expected: RunCommand | RunCommand['kind'] }[] = [
    { name: 'earlier runs spent every model call', history: history([], { limits, spentBefore: { modelCalls: 2, toolCalls: 0 } }), expected: modelLimit },
    { name: 'one left after the earlier runs', history: history([], { limits, spentBefore: { modelCalls: 1, toolCalls: 0 } }), expected: 'look_for_steers' },
    {
      name: 'this run\'s model calls count as they were made',
      history: history([called([call('c1')]), step(modelStep([call('c1')])), step(toolResult('c1'))], { limits, spentBefore: { modelCalls: 1, toolCalls: 0 } }),
      expected: modelLimit,
    },
    {
      name: 'a tool\'s sampling requests are model calls',
      history: history([{ type: 'sampled' }, step(toolResult('c1'))], { limits, spentBefore: { modelCalls: 1, toolCalls: 1 }, claimed: [modelStep([call('c1')])] }),
      expected: modelLimit,
    },
    {
      name: 'an overflowed call counts once with its retry',
      history: history([overflowed(false), { type: 'overflow_compacted', context: SENT }, called([call('c1')], { retry: true }), step(modelStep([call('c1')])), step(toolResult('c1'))], { limits }),
      expected: 'look_for_steers',
    },
    {
      name: 'new tool calls count when their rows appear',
      history: history([step(toolResult('c1')), step(toolResult('c2'))], { limits, claimed: [modelStep([call('c1'), call('c2'), call('c3')])] }),
      expected: toolLimit,
    },
    {
      name: 'a call that started before (and counted then) adds nothing with its result',
      history: history([step(toolResult('c1')), step(toolResult('c2'))], { limits, spentBefore: { modelCalls: 1, toolCalls: 1 }, claimed: [modelStep([call('c1'), call('c2'), call('c3')]), toolStarted('c1')] }),
      expected: toolLimit,
    },
    {
      name: 'a started call spends nothing new when it runs again',
      history: history([], { limits, spentBefore: { modelCalls: 1, toolCalls: 2 }, claimed: [modelStep([call('c1')]), toolStarted('c1')] }),
      expected: 'run_tool',
    },
    { name: 'a stored answer settles whatever was spent', history: history([], { limits, spentBefore: { modelCalls: 2, toolCalls: 2 }, claimed: [modelStep([], 'done')] }), expected: 'settle' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const decided = decide(c.history);
      if (typeof c.expected === 'string') assert.equal(decided.kind, c.expected);
      else assert.deepEqual(decided, c.expected);
    });
  }

  it('sums what was spent from the record alone', () => {
    const h = history([called([call('c1')]), step(modelStep([call('c1')])), { type: 'sampled' }, step(toolResult('c1')), overflowed(false), { type: 'overflow_compacted', context: SENT }, called([], { retry: true })], {
      spentBefore: { modelCalls: 3, toolCalls: 4 },
    });
    assert.deepEqual(spent(h), { maxModelCalls: 10, maxToolCalls: 10, modelCalls: 6, toolCalls: 5 });
  });
});

describe('run decider: overflow, answers and waits', () => {
  const cases: { name: string; history: RunHistory; expected: RunCommand }[] = [
    { name: 'an overflow before anything was shown compacts once', history: history([overflowed(false)]), expected: { kind: 'compact_after_overflow', sent: SENT, cause: new ModelError('model_context_length_exceeded', 'too long') } },
    { name: 'the compacted context is retried once', history: history([overflowed(false), { type: 'overflow_compacted', context: SENT }]), expected: { kind: 'call_model', retryWith: SENT } },
    { name: 'a retry that overflows again fails the turn', history: history([overflowed(false), { type: 'overflow_compacted', context: SENT }, overflowed(true)]), expected: close({ kind: 'failed', error: TOO_LARGE }) },
    { name: 'an overflow after text was shown fails with the provider\'s error', history: history([overflowed(false, true)]), expected: failed('model_context_length_exceeded', 'too long') },
    { name: 'a model answer with no tool calls settles the turn', history: history([called([])]), expected: { kind: 'settle', answer: { from: 'model', result: answer([]) } } },
    { name: 'a model answer with tool calls is committed as a step', history: history([called([call('c1')])]), expected: { kind: 'commit_model_step', result: answer([call('c1')]) } },
    { name: 'a stored answer settles instead of calling the model again', history: history([], { claimed: [modelStep([], 'done')] }), expected: { kind: 'settle', answer: { from: 'stored', text: 'done' } } },
    { name: 'a manual compaction turn compacts', history: history([], { kind: 'compaction' }), expected: { kind: 'compact' } },
    {
      name: 'and then completes with no answer',
      history: history([step({ runId: 'r1', kind: 'compaction', status: 'completed', ref: null, output: {} })], { kind: 'compaction' }),
      expected: { kind: 'settle', answer: { from: 'none' } },
    },
    { name: 'a call that needs approval suspends the run', history: history([], { claimed: [modelStep([call('c1', 'risky')])] }), expected: { kind: 'suspend', plan: { action: 'wait', kind: 'approval', calls: [call('c1', 'risky')] } } },
    { name: 'a coordinator awaits its members', history: history([], { claimed: [modelStep([call('c1', 'spawn')])] }), expected: { kind: 'await_members', plan: { action: 'wait', kind: 'cooperation', calls: [call('c1', 'spawn')] } } },
    { name: 'a server call runs', history: history([], { claimed: [modelStep([call('c1')])] }), expected: { kind: 'run_tool', plan: { action: 'execute', call: call('c1'), args: {}, started: false } } },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(decide(c.history), c.expected));
});

describe('run decider: budgets, checked before each call of a budgeted turn', () => {
  const budgeted = { budgeted: true };
  const reached = (onExceeded: 'pause' | 'fail'): BudgetReached => ({ budgetId: 'b1', scope: { kind: 'project', id: 'p' }, limit: 'model_calls', limitValue: 2, spent: 2, onExceeded });
  const checked = (found: BudgetReached | null): RunFact => ({ type: 'budget_checked', reached: found });
  const budgetAnswer = (decision: 'approve' | 'reject'): CommittedStep => ({
    runId: 'r1',
    kind: 'waitpoint',
    status: 'completed',
    ref: 'w1',
    output: { kind: 'budget', response: { type: 'approval', decisions: [{ call_id: 'budget', decision }] } },
  });
  const cases: { name: string; history: RunHistory; expected: RunCommand }[] = [
    { name: 'no budget in scope: the model is called without a check', history: history([{ type: 'steers_looked', waiting: false }]), expected: { kind: 'call_model', retryWith: null } },
    { name: 'budgeted: the budgets are checked once no steer joins', history: history([{ type: 'steers_looked', waiting: false }], budgeted), expected: { kind: 'check_budget', call: { kind: 'model' } } },
    { name: 'budgeted: a waiting steer still joins first', history: history([{ type: 'steers_looked', waiting: true }], budgeted), expected: { kind: 'join_steers', keepShown: false } },
    { name: 'room: the model is called', history: history([{ type: 'steers_looked', waiting: false }, checked(null)], budgeted), expected: { kind: 'call_model', retryWith: null } },
    { name: 'no room, pause: the run stops at a budget waitpoint', history: history([{ type: 'steers_looked', waiting: false }, checked(reached('pause'))], budgeted), expected: { kind: 'stop_for_budget', reached: reached('pause'), ending: null } },
    {
      name: 'no room, fail: announced, then the turn fails with budget_exceeded',
      history: history([checked(reached('fail'))], budgeted),
      expected: { kind: 'stop_for_budget', reached: reached('fail'), ending: { kind: 'failed', error: { code: 'budget_exceeded', message: 'Budget b1 reached its model_calls limit of 2 (spent 2)' } } },
    },
    { name: 'a server call is checked before it runs', history: history([], { ...budgeted, claimed: [modelStep([call('c1')])] }), expected: { kind: 'check_budget', call: { kind: 'tool', call_id: 'c1' } } },
    {
      name: 'with room the server call runs',
      history: history([checked(null)], { ...budgeted, claimed: [modelStep([call('c1')])] }),
      expected: { kind: 'run_tool', plan: { action: 'execute', call: call('c1'), args: {}, started: false } },
    },
    {
      name: 'a recorded result (an unknown tool) calls nothing and is not checked',
      history: history([], { ...budgeted, claimed: [modelStep([call('c1', 'nope')])] }),
      expected: { kind: 'run_tool', plan: { action: 'record', call: call('c1', 'nope'), outcome: { success: false, output: 'Unknown tool nope' }, started: false } },
    },
    { name: 'an approved budget waitpoint goes on to the call (checked again)', history: history([], { ...budgeted, claimed: [budgetAnswer('approve')] }), expected: { kind: 'look_for_steers', lookup: 'pending' } },
    {
      name: 'a rejected budget waitpoint fails the turn with budget_exceeded',
      history: history([], { ...budgeted, claimed: [budgetAnswer('reject')] }),
      expected: failed('budget_exceeded', 'A budget in the session\'s scope has no room, and its waitpoint was rejected'),
    },
    {
      name: 'an approval waitpoint rejecting a tool call whose id is "budget" rejects that call, not the budget',
      history: history([], { ...budgeted, claimed: [modelStep([call('budget', 'risky')]), { ...budgetAnswer('reject'), output: { kind: 'approval', response: { type: 'approval', decisions: [{ call_id: 'budget', decision: 'reject' }] } } }] }),
      expected: { kind: 'run_tool', plan: { action: 'record', call: call('budget', 'risky'), outcome: { success: false, output: 'The user rejected this call of risky' }, started: false } },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(decide(c.history), c.expected));
});
