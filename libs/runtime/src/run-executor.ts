import { Injectable } from '@nestjs/common';
import type { HeldTurn, CommittedStep } from '#libs/engine';
import { tracingOn, withSpan } from '#libs/telemetry';
import { BudgetGate } from './budget-gate.js';
import { type BuiltContext, ContextManager } from './context-manager.js';
import { CooperationStep } from './cooperation-step.js';
import { ModelCallStep } from './model-call-step.js';
import { type PendingAfter, RunClosing } from './run-closing.js';
import type { RunControl } from './run-control.js';
import { decide, decideInterrupted, type Interruption, interruptionOf, type RunCommand, type SettledAnswer } from './run-decider.js';
import { TurnCancelledError } from './run-errors.js';
import { type ModelCallAllowance, type RunFact, spent, withFact } from './run-history.js';
import { emptyOutput, RunScopes, type RunState } from './run-scope.js';
import { RunTrace } from './run-spans.js';
import { ToolCallStep, WAITING } from './tool-call-step.js';
import { type TurnPlan, TurnPlanning } from './turn-planning.js';

/** What performing one command led to: a fact to record, the end of the run, or how the run is to end (RunClosing.end). */
type Performed = { fact: RunFact } | { ended: PendingAfter } | { close: Interruption };

/** What a handler needs besides its command: the run, its turn's tools, its abort switch, and the model calls sampling may spend. */
interface Performing {
  state: RunState;
  turn: TurnPlan;
  control: RunControl;
  allowance: ModelCallAllowance;
}

const ENDED: Performed = { ended: null };

/**
 * Executes a held turn command by command: the decider (`decide`) reads the run's history (the
 * steps the turn had committed, what its earlier runs spent, and the facts this run recorded) and
 * what arrived (a cancel, a shutdown, a lost lease, the turn's timeout, an error), and says what
 * to do next; this performs that one command (a model call streamed as live deltas, a tool call,
 * a compaction, a stop at a waitpoint, a join of steers, a settlement) and records its result as a
 * new fact. It decides nothing itself: a run that resumes or takes over continues exactly where
 * the last committed step left off, because the decider plans from the same record.
 */
@Injectable()
export class RunExecutor {
  constructor(
    private readonly scopes: RunScopes,
    private readonly planning: TurnPlanning,
    private readonly modelCall: ModelCallStep,
    private readonly toolCall: ToolCallStep,
    private readonly closing: RunClosing,
    private readonly context: ContextManager,
    private readonly cooperation: CooperationStep,
    private readonly budgets: BudgetGate,
  ) {}

  /**
   * Runs the held turn until the run ends. Returns the session's pending inputs when the turn
   * settled (what its driver has left to claim), or null when the run ended otherwise (waiting,
   * released, fenced): then the driver looks for itself.
   */
  execute(held: HeldTurn, control: RunControl, leaseSentAt: number): Promise<PendingAfter> {
    // Off: a plain passthrough (no span, no closure, no promise of its own). Traced: the claim's
    // span and the run's `invoke_agent` span (`leaseSentAt`: when the claim began), active while
    // the run executes, so its children, its outgoing requests' `traceparent` and its log lines name it.
    if (!tracingOn()) return this.executeHeld(held, control, leaseSentAt, undefined);
    return this.executeTraced(held, control, leaseSentAt);
  }

  private async executeTraced(held: HeldTurn, control: RunControl, leaseSentAt: number): Promise<PendingAfter> {
    const trace = RunTrace.claimed(held, leaseSentAt);
    if (!trace) return this.executeHeld(held, control, leaseSentAt, undefined);
    try {
      return await withSpan(trace.span, () => this.executeHeld(held, control, leaseSentAt, trace));
    } catch (error) {
      trace.ended('failed', error);
      throw error;
    } finally {
      trace.finish();
    }
  }

  private async executeHeld(held: HeldTurn, control: RunControl, leaseSentAt: number, trace: RunTrace | undefined): Promise<PendingAfter> {
    const { state, close } = await this.scopes.open(held, control, leaseSentAt);
    state.trace = trace;
    let stopTimer = (): void => undefined;
    let settled = false;
    try {
      let ending: Interruption;
      try {
        await state.publish(held.batch);
        // A turn taken over while it was being cancelled only needs its cancellation finished.
        if (held.turn.cancellationPending) throw new TurnCancelledError();
        stopTimer = await this.scopes.startTurnTimer(held, control);
        const ran = await this.run(state, await this.planning.prepare(state, control.abort.signal), control);
        if ('ended' in ran) {
          settled = ran.ended !== null;
          return ran.ended;
        }
        ending = ran.close;
      } catch (error) {
        // Whatever a command threw (or the abort that stopped it) arrives at the decider as an interruption.
        ending = decideInterrupted(interruptionOf(control.abort.signal, error)).ending;
      }
      // Ended outside the catch: an ending that throws is not ended a second time.
      // After a yield the run is the next one: its span is the active one (RunTrace.yielded).
      const pending = await (trace ? withSpan(trace.span, () => this.closing.end(state, ending)) : this.closing.end(state, ending));
      settled = pending !== null;
      return pending;
    } finally {
      stopTimer();
      close();
      // A call's reservation is released with its ledger row (its step's statement), and whatever a
      // run still holds by the statement that settles it (completed, failed or cancelled); what a
      // run that stopped otherwise (a waitpoint, a release, a fence) holds is released with its end.
      if (state.held.budgeted) {
        for (const runId of new Set([held.lease.runId, state.lease.runId])) if (!(settled && runId === state.lease.runId)) await this.budgets.release(state, runId);
      }
    }
  }

  /** Decide, perform, record, until a command ends the run (or says how it ends: `close`). */
  private async run(state: RunState, turn: TurnPlan, control: RunControl): Promise<Exclude<Performed, { fact: RunFact }>> {
    let history = turn.history;
    // A sampling request of a tool in flight is one of the turn's model calls: recorded as it is made,
    // and checked against a budgeted turn's budgets like any model call (reserved under its own key).
    let samplings = 0;
    const allowance: ModelCallAllowance = {
      limit: history.limits.maxModelCalls,
      take: () => {
        if (spent(history).modelCalls >= history.limits.maxModelCalls) return false;
        history = withFact(history, { type: 'sampled' });
        return true;
      },
      budgets: async (tokens) => (state.held.budgeted ? this.budgets.check(state, { kind: 'sampling', key: `sampling:${(samplings += 1)}`, tokens }) : null),
    };
    const performing: Performing = { state, turn, control, allowance };
    for (;;) {
      // A budget created (or the last one deleted) while the run went on applies from the next call.
      if (history.budgeted !== state.held.budgeted) history = { ...history, budgeted: state.held.budgeted };
      // A cancel, a shutdown or a lost lease heard while the last command ran ends the run at this boundary.
      const { signal } = control.abort;
      const command = decide(history, signal.aborted ? interruptionOf(signal, signal.reason) : null);
      // Traced: each command under the run's span of now (a yield to steers started the next run's).
      const { trace } = state;
      const performed = await (trace ? withSpan(trace.span, () => this.perform(command, performing)) : this.perform(command, performing));
      if (!('fact' in performed)) return performed;
      history = withFact(history, performed.fact);
    }
  }

  /** One handler per command kind. */
  private async perform(command: RunCommand, on: Performing): Promise<Performed> {
    const { state, turn, control } = on;
    switch (command.kind) {
      case 'look_for_steers': {
        // A failed look leaves the steer to the next heartbeat, which announces it again.
        const look = command.lookup === 'pending' ? state.steerPending() : state.steerWaiting();
        return { fact: { type: 'steers_looked', waiting: await look.catch(() => false) } };
      }
      case 'join_steers': {
        if (!command.keepShown) state.boundaryAt(state.outputIndex);
        const joined = await this.closing.yieldToSteers(state, control);
        return joined.joined ? { fact: { type: 'steers_joined' } } : { ended: joined.pending };
      }
      case 'call_model':
        return this.callModel(command.retryWith, on);
      case 'commit_model_step':
        return stepOrEnd(await this.modelCall.commit(state, command.result));
      case 'run_tool': {
        const step = await this.toolCall.run(state, command.plan, turn.tools, turn.declarations, control, on.allowance);
        return stepOrEnd(step === WAITING ? null : step);
      }
      case 'coordinate':
        return stepOrEnd(await this.cooperation.coordinate(state, command.plan));
      case 'check_budget':
        return { fact: { type: 'budget_checked', reached: await this.budgets.check(state, command.call) } };
      case 'stop_for_budget':
        await this.budgets.stop(state, command.reached);
        return command.ending ? { close: command.ending } : ENDED;
      case 'suspend':
        await this.toolCall.wait(state, command.plan);
        return ENDED;
      case 'await_members':
        // Members that already settled resolve the wait at once; otherwise the run stops here and their settling wakes the turn.
        return stepOrEnd(await this.cooperation.wait(state, command.plan));
      case 'compact':
        return stepOrEnd(await this.context.compactNow(state, turn.tools, control));
      case 'compact_after_overflow': {
        const context = await this.context.afterOverflow(state, turn.tools, control, command.cause, command.sent);
        return context ? { fact: { type: 'overflow_compacted', context } } : ENDED;
      }
      case 'settle':
        return { ended: await this.settle(state, command.answer) };
      case 'close':
        return { close: command.ending };
      default:
        // A new command kind without its handler here fails to compile.
        throw new Error(`unhandled command ${(command satisfies never as { kind: string }).kind}`);
    }
  }

  /**
   * One model call, with the context prepared now (compacted first when it would pass the
   * threshold: a committed step), or the one compacted after an overflow. Its answer, or the
   * provider's refusal of the context as too long, is the fact; any other error throws.
   */
  private async callModel(retryWith: BuiltContext | null, on: Performing): Promise<Performed> {
    const { state, turn, control } = on;
    const context = retryWith ?? (await this.context.prepare(state, turn.tools, control));
    if (!context) return ENDED;
    try {
      const result = await this.modelCall.call(state, context, turn.tools, control);
      if (!result.yielded) this.context.observe(state, context, result.usage);
      return { fact: { type: 'model_called', result, retry: retryWith !== null } };
    } catch (error) {
      const overflow = this.context.overflowOf(state, error, context, retryWith !== null);
      if (!overflow) throw error;
      return { fact: overflow };
    }
  }

  private settle(state: RunState, answer: SettledAnswer): Promise<PendingAfter> {
    switch (answer.from) {
      case 'stored':
        state.output = { ...emptyOutput(state.outputIndex), text: answer.text };
        return this.closing.settle(state, { status: 'completed' });
      case 'none':
        return this.closing.settle(state, { status: 'completed', withoutAnswer: true });
      case 'model': {
        const { result } = answer;
        return this.closing.settle(state, { status: 'completed', modelCall: { model: state.held.run.model, usage: result.usage, finishReason: result.finishReason, requestJson: result.requestJson, wallMs: result.wallMs } });
      }
      default:
        throw new Error(`unknown answer ${(answer satisfies never as { from: string }).from}`);
    }
  }
}

/** A committed step is the fact; none (the lease is gone, or the run stopped at a waitpoint) ends the run. */
function stepOrEnd(step: CommittedStep | null): Performed {
  return step ? { fact: { type: 'step', step } } : ENDED;
}
