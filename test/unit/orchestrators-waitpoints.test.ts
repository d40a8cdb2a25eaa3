import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityManager } from 'typeorm';
import { type Budget, BudgetsRepository, NO_SPENDING } from '#libs/budgets';
import { ItemsRepository, SessionsRepository, StepsRepository, ToolOutputItems, TurnsRepository, type Waitpoint, WaitpointControls, type WaitpointResponse } from '#libs/engine';
import { ELICITATION_ACTION_QUESTION } from '#libs/tools';
import { aCallsWaitpoint, aRun, aSession, aTurn, aWaitingTurn, aWaitpoint, domainError, typesOf } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// The clients' side of waitpoints (WaitpointControls): which responses resolve a waitpoint, what a
// resolution records (a waitpoint step without a lease, the turn resumed in a new run for any
// worker), and what a stale or partial response leaves untouched.
// The statements the manager runs itself: a client tool result's ledger row (the usage ledger).
const queries: { sql: string; params: unknown[] }[] = [];
const manager = {
  query: async (sql: string | { text: string }, params: unknown[]) => {
    queries.push({ sql: typeof sql === 'string' ? sql : sql.text, params });
    return [{ rows: [], run: null, turn: null }];
  },
} as unknown as EntityManager;

function controls(waitpoint: Waitpoint | null = aWaitpoint()) {
  const service = newTestService(WaitpointControls);
  const turns = service.mocks.get(TurnsRepository);
  const steps = service.mocks.get(StepsRepository);
  const sessions = service.mocks.get(SessionsRepository);
  turns.findTurn.mock.mockImplementation(async () => (waitpoint ? aWaitingTurn(waitpoint) : aTurn()));
  steps.recordStep.mock.mockImplementation(async () => true);
  turns.resumeTurn.mock.mockImplementation(async (_m, turn, nextRunId) => ({ turn: { ...turn, status: 'in_progress', waitpoint: null, currentRunId: nextRunId }, run: aRun({ id: nextRunId, leaseOwner: null }) }));
  return { ...service, turns, steps, sessions };
}

const answer = (answers: Record<string, string | string[]>): WaitpointResponse => ({ type: 'answer', answers: Object.entries(answers).map(([question_id, a]) => ({ question_id, answer: a })) });
const calls = [
  { call_id: 'c1', name: 'shell', arguments: '{}' },
  { call_id: 'c2', name: 'fetch', arguments: '{}' },
];
const approval = aCallsWaitpoint('approval', calls, { id: 'wp2' });
const clientTool = aCallsWaitpoint('client_tool', calls, { id: 'wp3' });

describe('resolving a waitpoint (WaitpointControls.resume)', () => {
  it('records the answer as the waitpoint\'s step, without a lease, and resumes the turn in a new run for any worker', async () => {
    const { sut, turns, steps, sessions } = controls();
    const resumed = await sut.resume(manager, aSession(), 't1', 'wp1', answer({ q1: 'blue' }));
    const [, lease, step] = steps.recordStep.mock.calls[0]!.arguments;
    assert.equal(lease, null);
    assert.deepEqual([step.kind, step.ref, step.runId, step.output], ['waitpoint', 'wp1', 'r1', { kind: 'question', response: answer({ q1: 'blue' }) }]);
    const nextRunId = turns.resumeTurn.mock.calls[0]!.arguments[2];
    assert.equal(resumed.runId, nextRunId);
    assert.equal(sessions.recordRunStarted.mock.calls[0]!.arguments[2].current_run_id, nextRunId);
    assert.deepEqual(typesOf(resumed.events), ['yuxi.session.run.created', 'agent.session.turn.in_progress']);
  });

  it('is stale for a turn not waiting, or waiting at another waitpoint; not_found for another session\'s turn', async () => {
    await assert.rejects(controls(null).sut.resume(manager, aSession(), 't1', 'wp1', answer({ q1: 'x' })), domainError('waitpoint_stale', { turn_status: 'in_progress', waitpoint_id: null }));
    await assert.rejects(controls().sut.resume(manager, aSession(), 't1', 'wp9', answer({ q1: 'x' })), domainError('waitpoint_stale', { waitpoint_id: 'wp1' }));
    await assert.rejects(controls().sut.resume(manager, aSession({ id: 's2' }), 't1', 'wp1', answer({ q1: 'x' })), domainError('not_found'));
  });

  it('refuses a response of the wrong kind, unknown ids (stale), and gaps or repeats (incomplete), recording nothing', async () => {
    const cases: [Waitpoint, WaitpointResponse, Parameters<typeof domainError>[0]][] = [
      [aWaitpoint(), { type: 'approval', decisions: [{ call_id: 'c1', decision: 'approve' }] }, 'waitpoint_incomplete'],
      [clientTool, { type: 'tool_results' }, 'waitpoint_incomplete'],
      [aWaitpoint(), answer({ q1: 'x', q9: 'y' }), 'waitpoint_stale'],
      [approval, { type: 'approval', decisions: [{ call_id: 'c1', decision: 'approve' }] }, 'waitpoint_incomplete'],
      [aWaitpoint(), answer({ q1: ' ' }), 'waitpoint_incomplete'],
      [aWaitpoint(), answer({ q1: ['a', 'b'] }), 'waitpoint_incomplete'],
    ];
    for (const [waitpoint, response, code] of cases) {
      const { sut, steps, turns } = controls(waitpoint);
      await assert.rejects(sut.resume(manager, aSession(), 't1', waitpoint.id, response), domainError(code), JSON.stringify(response));
      assert.equal(steps.recordStep.mock.callCount() + turns.resumeTurn.mock.callCount(), 0);
    }
  });

  it('trusts the tools approved for the session, unless the caller may not (a pinned agent\'s approval)', async () => {
    const decisions: WaitpointResponse = {
      type: 'approval',
      decisions: [
        { call_id: 'c1', decision: 'approve_session' },
        { call_id: 'c2', decision: 'reject' },
      ],
    };
    const trusting = controls(approval);
    await trusting.sut.resume(manager, aSession(), 't1', 'wp2', decisions);
    assert.deepEqual(trusting.sessions.trustTools.mock.calls[0]!.arguments.slice(1), ['s1', ['shell']]);
    const pinned = controls(approval);
    await pinned.sut.resume(manager, aSession(), 't1', 'wp2', decisions, { trustForSession: false });
    assert.equal(pinned.sessions.trustTools.mock.callCount(), 0);
    assert.equal(pinned.turns.resumeTurn.mock.callCount(), 1, 'the call itself is still approved');
  });

  it('is stale when another response resolved the waitpoint first (its step exists) or the turn stopped waiting', async () => {
    const first = controls();
    first.steps.recordStep.mock.mockImplementation(async () => false);
    await assert.rejects(first.sut.resume(manager, aSession(), 't1', 'wp1', answer({ q1: 'x' })), domainError('waitpoint_stale'));
    assert.equal(first.turns.resumeTurn.mock.callCount(), 0);
    const moved = controls();
    moved.turns.resumeTurn.mock.mockImplementation(async () => null);
    await assert.rejects(moved.sut.resume(manager, aSession(), 't1', 'wp1', answer({ q1: 'x' })), domainError('waitpoint_stale'));
    assert.equal(moved.sessions.recordRunStarted.mock.callCount(), 0);
  });

  it('answers an MCP server\'s elicitation with the action and the fields converted to their schema types', async () => {
    const elicitation = aWaitpoint({
      questions: [],
      elicitation: { call_id: 'c5', server_label: 'mcp', mode: 'form', message: 'Age?', requested_schema: { type: 'object', properties: { age: { type: 'integer' } }, required: ['age'] } },
    });
    const { sut, steps } = controls(elicitation);
    await sut.resume(manager, aSession(), 't1', 'wp1', answer({ [ELICITATION_ACTION_QUESTION]: 'accept', age: '42' }));
    const response = steps.recordStep.mock.calls[0]!.arguments[2].output.response;
    assert.deepEqual(response, { type: 'elicitation', call_id: 'c5', action: 'accept', content: { age: 42 } });
  });
});

describe('client tool results (WaitpointControls.toolResult)', () => {
  function results(recorded: string[]) {
    const service = controls(clientTool);
    service.mocks.get(ItemsRepository).countItems.mock.mockImplementation(async () => 4);
    service.mocks.get(ToolOutputItems).write.mock.mockImplementation(async () => [{ type: 'agent.session.turn.item.done' } as never]);
    service.steps.toolResults.mock.mockImplementation(async () => new Map(recorded.map((id) => [id, { success: true, output: 'ok' }])) as never);
    return service;
  }

  it('records one result and its output item; the turn waits while another call has none', async () => {
    const { sut, steps, turns, mocks } = results(['c1']);
    queries.length = 0;
    const resumed = await sut.toolResult(manager, aSession(), 't1', 'c1', { success: true, output: 'ok' });
    const [, lease, step] = steps.recordStep.mock.calls[0]!.arguments;
    assert.deepEqual([lease, step.kind, step.ref, step.runId], [null, 'tool_call', 'c1', 'r1']);
    // The call is one tool call in the usage ledger, written in the same transaction, for the waitpoint's run.
    const ledger = queries.filter((q) => q.sql.includes('INSERT INTO usage_ledger'));
    assert.equal(ledger.length, 1);
    assert.deepEqual(ledger[0]!.params.slice(1, 3), ['r1', 't1']);
    assert.deepEqual(JSON.parse(String(ledger[0]!.params[3])), [{ kind: 'tool_call', tool: clientTool.tool_calls![0]!.name, wall_ms: 0 }]);
    assert.deepEqual(mocks.get(ToolOutputItems).write.mock.calls[0]!.arguments.slice(2, 5), ['r1', 4, 'c1']);
    assert.deepEqual(resumed, { events: [{ type: 'agent.session.turn.item.done' }], runId: null });
    assert.equal(turns.resumeTurn.mock.callCount(), 0);
  });

  it('resumes the turn with the last result: one waitpoint step, then the new run', async () => {
    const { sut, steps, turns } = results(['c1', 'c2']);
    const resumed = await sut.toolResult(manager, aSession(), 't1', 'c2', { success: false, output: 'denied' });
    assert.deepEqual(steps.recordStep.mock.calls.map((c) => c.arguments[2].kind), ['tool_call', 'waitpoint']);
    assert.equal(resumed.runId, turns.resumeTurn.mock.calls[0]!.arguments[2]);
    assert.deepEqual(typesOf(resumed.events), ['agent.session.turn.item.done', 'yuxi.session.run.created', 'agent.session.turn.in_progress']);
  });

  it('is stale for a call the waitpoint does not wait for, or one that already has a result', async () => {
    const unknown = results([]);
    await assert.rejects(unknown.sut.toolResult(manager, aSession(), 't1', 'c9', { success: true, output: '' }), domainError('waitpoint_stale', { waitpoint_id: 'wp3' }));
    assert.equal(unknown.steps.recordStep.mock.callCount(), 0);
    const repeated = results(['c1']);
    repeated.steps.recordStep.mock.mockImplementation(async () => false);
    await assert.rejects(repeated.sut.toolResult(manager, aSession(), 't1', 'c1', { success: true, output: '' }), domainError('waitpoint_stale'));
    assert.equal(repeated.mocks.get(ToolOutputItems).write.mock.callCount(), 0);
  });

  it('a question waitpoint takes no tool result', async () => {
    const { sut, steps } = controls();
    await assert.rejects(sut.toolResult(manager, aSession(), 't1', 'c1', { success: true, output: '' }), domainError('waitpoint_stale'));
    assert.equal(steps.recordStep.mock.callCount(), 0);
  });
});

describe('a budget waitpoint (WaitpointControls.resume)', () => {
  const budgetWaitpoint = aWaitpoint({ id: 'wp4', kind: 'budget', questions: undefined, budget_id: 'b1', limit: 'model_calls', spent: 1 });
  const decide = (decision: 'approve' | 'reject', callId = 'budget'): WaitpointResponse => ({ type: 'approval', decisions: [{ call_id: callId, decision }] });
  const budget = (limit: number): Budget => ({
    id: 'b1',
    accountId: 'u1',
    createdBy: 'u1',
    scopeKind: 'session',
    scopeId: 's1',
    appId: null,
    limits: { model_calls: limit },
    period: 'lifetime',
    onExceeded: 'pause',
    metadata: {},
    createdAt: new Date(0),
    updatedAt: new Date(0),
  });
  function withBudget(limit: number) {
    const service = controls(budgetWaitpoint);
    const budgets = service.mocks.get(BudgetsRepository);
    budgets.inScope.mock.mockImplementation(async () => [budget(limit)]);
    budgets.spent.mock.mockImplementation(async () => new Map([['b1', { budgetId: 'b1', spent: { ...NO_SPENDING, model_calls: 1 }, reserved: NO_SPENDING, turnCounted: true, clock: new Date(0) }]]));
    return { ...service, budgets };
  }

  it('approve while the budget still has no room is 409 budget_exceeded, recording nothing: the turn still waits', async () => {
    const { sut, steps, turns, budgets } = withBudget(1);
    await assert.rejects(sut.resume(manager, aSession(), 't1', 'wp4', decide('approve')), domainError('budget_exceeded', { budget_id: 'b1', limit: 'model_calls', limit_value: 1, spent: 1 }));
    assert.equal(steps.recordStep.mock.callCount() + turns.resumeTurn.mock.callCount(), 0);
    // What the stopped run reserved counts no more (it holds no lease); its turn is asked about, so already counted.
    assert.deepEqual(budgets.spent.mock.calls[0]!.arguments[2], { turnId: 't1' });
  });

  it('approve once there is room resumes the turn (its run checks again); reject resumes it only to fail, reading no budget', async () => {
    const raised = withBudget(2);
    const resumed = await raised.sut.resume(manager, aSession(), 't1', 'wp4', decide('approve'));
    assert.ok(resumed.runId);
    assert.deepEqual(raised.steps.recordStep.mock.calls[0]!.arguments[2].output, { kind: 'budget', response: decide('approve') });
    const rejecting = withBudget(1);
    await rejecting.sut.resume(manager, aSession(), 't1', 'wp4', decide('reject'));
    assert.equal(rejecting.budgets.inScope.mock.callCount(), 0);
    assert.equal(rejecting.turns.resumeTurn.mock.callCount(), 1);
  });

  it('takes exactly the one decision `budget`: another call id is stale, an answer the wrong kind', async () => {
    await assert.rejects(withBudget(2).sut.resume(manager, aSession(), 't1', 'wp4', decide('approve', 'c1')), domainError('waitpoint_stale'));
    await assert.rejects(withBudget(2).sut.resume(manager, aSession(), 't1', 'wp4', answer({ budget: 'yes' })), domainError('waitpoint_incomplete'));
  });
});
