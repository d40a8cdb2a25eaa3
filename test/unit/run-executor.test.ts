import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Interruption, RunExecutor, type RunHistory, type ToolPolicy, TurnCancelledError } from '#libs/runtime';
import type { BudgetReached, CommittedStep, ToolCallSpec } from '#libs/engine';

// The executor only performs the decider's commands and records their results: driven here with
// fake collaborators (no database, no model, no tools), it is checked for what it performed.
const POLICY: ToolPolicy = { executorOf: () => 'server', needsApproval: () => false, idempotent: () => true, checkArguments: () => ({ ok: true, value: {} }) };
const call = (id: string): ToolCallSpec => ({ call_id: id, name: 'add', arguments: '{}' });
const answer = (toolCalls: ToolCallSpec[], yielded = false) => ({ yielded, text: 'hi', toolCalls, usage: null, finishReason: 'stop', requestJson: null });
const OVERFLOW = new Error('overflow');
const CONTEXT = { messages: [] };

interface Script {
  /** What each model call answers, in order (an Error is thrown). */
  answers: (ReturnType<typeof answer> | Error)[];
  limits?: { maxModelCalls: number; maxToolCalls: number };
  /** How many sampling requests each tool run makes. */
  sampling?: number;
  onToolRun?: (control: { abort: AbortController }) => void;
  endThrows?: boolean;
  /** A budgeted turn: what each budget check finds (null: room), in order; undefined: no budget in scope. */
  budgets?: (BudgetReached | null)[];
}

async function execute(script: Script): Promise<{ performed: string[]; pending: number | null | Error; sampled: boolean[] }> {
  const performed: string[] = [];
  const sampled: boolean[] = [];
  const budgeted = script.budgets !== undefined;
  const state = { held: { run: { model: 'm' }, budgeted }, lease: { runId: 'r2' }, outputIndex: 0, output: {}, boundaryAt: () => undefined, publish: async () => undefined, steerWaiting: async () => false, steerPending: async () => false };
  const history: RunHistory = { kind: 'message', policy: POLICY, limits: script.limits ?? { maxModelCalls: 10, maxToolCalls: 10 }, budgeted, spentBefore: { modelCalls: 0, toolCalls: 0 }, claimed: [], facts: [] };
  const fakes = {
    scopes: { open: async () => ({ state, close: () => undefined }), startTurnTimer: async () => () => undefined },
    planning: { prepare: async () => ({ declarations: [], tools: [], history }) },
    modelCall: {
      call: async (_state: unknown, context: unknown) => {
        const next = script.answers.shift()!;
        performed.push(context === CONTEXT ? 'call_model' : 'call_model(retry)');
        if (next instanceof Error) throw next;
        return next;
      },
      commit: async (_state: unknown, result: ReturnType<typeof answer>): Promise<CommittedStep> => {
        performed.push('commit_model_step');
        return { runId: 'r', kind: 'model_call', status: 'completed', ref: null, output: { text: result.text, tool_calls: result.toolCalls } };
      },
    },
    toolCall: {
      run: async (_s: unknown, plan: { call: ToolCallSpec }, _t: unknown, _d: unknown, control: { abort: AbortController }, allowance: { take(): boolean }): Promise<CommittedStep> => {
        performed.push(`run_tool ${plan.call.call_id}`);
        for (let i = 0; i < (script.sampling ?? 0); i += 1) sampled.push(allowance.take());
        script.onToolRun?.(control);
        return { runId: 'r', kind: 'tool_call', status: 'completed', ref: plan.call.call_id, output: { success: true, output: 'x' } };
      },
    },
    closing: {
      settle: async () => {
        performed.push('settle');
        return 3;
      },
      end: async (_state: unknown, ending: Interruption) => {
        performed.push(`end ${ending.kind}${ending.kind === 'failed' ? ` ${ending.error.code}` : ''}`);
        if (script.endThrows) throw new Error('settle failed');
        return null;
      },
      yieldToSteers: async () => ({ joined: true }),
    },
    context: {
      prepare: async () => CONTEXT,
      observe: () => undefined,
      afterOverflow: async () => {
        performed.push('compact_after_overflow');
        return { messages: ['compacted'] };
      },
      overflowOf: (_state: unknown, error: unknown, sent: unknown, retry: boolean) =>
        error === OVERFLOW ? { type: 'model_overflowed', retry, shown: false, sent, cause: error, error: { code: 'model_context_length_exceeded', message: 'm' }, tooLarge: { code: 'context_window_exceeded', message: 'm' } } : null,
    },
    cooperation: {},
    budgets: {
      check: async (_state: unknown, checked: { kind: string; call_id?: string }) => {
        performed.push(`check_budget ${checked.call_id ?? checked.kind}`);
        return script.budgets?.shift() ?? null;
      },
      stop: async (_state: unknown, reached: BudgetReached) => void performed.push(`stop_for_budget ${reached.onExceeded}`),
      release: async (_state: unknown, runId?: string) => void performed.push(runId ? `release ${runId}` : 'release'),
    },
  };
  const executor = new RunExecutor(fakes.scopes as never, fakes.planning as never, fakes.modelCall as never, fakes.toolCall as never, fakes.closing as never, fakes.context as never, fakes.cooperation as never, fakes.budgets as never);
  const held = { turn: { cancellationPending: false }, steps: [], batch: { rows: [] }, lease: { runId: 'r1' }, budgeted };
  const pending = await executor.execute(held as never, { abort: new AbortController() } as never, 0).catch((error: Error) => error);
  return { performed, pending, sampled };
}

describe('run executor: performs the decider\'s commands', () => {
  it('a tool round, then an answer that settles the turn (its pending inputs returned)', async () => {
    const run = await execute({ answers: [answer([call('c1')]), answer([])] });
    assert.deepEqual(run.performed, ['call_model', 'commit_model_step', 'run_tool c1', 'call_model', 'settle']);
    assert.equal(run.pending, 3);
  });

  it('the model-call limit, counted from what this run recorded, ends the run once', async () => {
    const run = await execute({ answers: [answer([call('c1')])], limits: { maxModelCalls: 1, maxToolCalls: 10 } });
    assert.deepEqual(run.performed, ['call_model', 'commit_model_step', 'run_tool c1', 'end failed turn_model_call_limit']);
  });

  it('a tool\'s sampling requests spend the turn\'s model calls and are refused past the limit', async () => {
    const run = await execute({ answers: [answer([call('c1')])], limits: { maxModelCalls: 3, maxToolCalls: 10 }, sampling: 3 });
    assert.deepEqual(run.sampled, [true, true, false]);
    assert.equal(run.performed.at(-1), 'end failed turn_model_call_limit');
  });

  it('a cancel heard while a tool ran ends the run at the next boundary', async () => {
    const run = await execute({ answers: [answer([call('c1')]), answer([])], onToolRun: (control) => control.abort.abort(new TurnCancelledError()) });
    assert.deepEqual(run.performed, ['call_model', 'commit_model_step', 'run_tool c1', 'end cancel']);
  });

  it('an overflow compacts and retries once; a second overflow fails the turn', async () => {
    const retried = await execute({ answers: [OVERFLOW, answer([])] });
    assert.deepEqual(retried.performed, ['call_model', 'compact_after_overflow', 'call_model(retry)', 'settle']);
    const twice = await execute({ answers: [OVERFLOW, OVERFLOW] });
    assert.deepEqual(twice.performed, ['call_model', 'compact_after_overflow', 'call_model(retry)', 'end failed context_window_exceeded']);
  });

  it('an error a command throws ends the run; an ending that throws is not ended a second time', async () => {
    const failed = await execute({ answers: [new TypeError('boom')] });
    assert.deepEqual(failed.performed, ['call_model', 'end failed run_failed']);
    const throwing = await execute({ answers: [answer([call('c1')])], limits: { maxModelCalls: 1, maxToolCalls: 10 }, endThrows: true });
    assert.equal(throwing.performed.filter((what) => what.startsWith('end')).length, 1);
    assert.ok(throwing.pending instanceof Error);
  });

  it('a budgeted turn checks its budgets before each model and tool call; the settle releases what the settled run held, the end what an earlier run of it held', async () => {
    const run = await execute({ answers: [answer([call('c1')]), answer([])], budgets: [null, null, null] });
    assert.deepEqual(run.performed, [
      'check_budget model',
      'call_model',
      'commit_model_step',
      'check_budget c1',
      'run_tool c1',
      'check_budget model',
      'call_model',
      'settle',
      'release r1',
    ]);
  });

  it('a budget without room stops the run before the call: at a waitpoint (pause), or failing the turn with budget_exceeded (fail)', async () => {
    const reached = (onExceeded: 'pause' | 'fail'): BudgetReached => ({ budgetId: 'b1', scope: { kind: 'session', id: 's1' }, limit: 'model_calls', limitValue: 1, spent: 1, onExceeded });
    const paused = await execute({ answers: [answer([call('c1')])], budgets: [null, null, reached('pause')] });
    assert.deepEqual(paused.performed.slice(-5), ['run_tool c1', 'check_budget model', 'stop_for_budget pause', 'release r1', 'release r2']);
    assert.equal(paused.pending, null);
    const failed = await execute({ answers: [], budgets: [reached('fail')] });
    assert.deepEqual(failed.performed, ['check_budget model', 'stop_for_budget fail', 'end failed budget_exceeded', 'release r1', 'release r2']);
  });
});
