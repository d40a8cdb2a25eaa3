import { Injectable } from '@nestjs/common';
import type { HeldTurn } from '#libs/lifecycle';
import type { CommittedStep } from '#libs/turns';
import { type BuiltContext, ContextManager } from './context-manager.js';
import { CooperationStep } from './cooperation-step.js';
import { ModelCallStep, type ModelCallResult } from './model-call-step.js';
import { RunClosing } from './run-closing.js';
import type { RunControl } from './run-control.js';
import { TurnCancelledError, TurnLimitError } from './run-errors.js';
import { emptyOutput, RunScopes, type RunState } from './run-scope.js';
import { planNextStep } from './step-plan.js';
import { ToolCallStep, WAITING } from './tool-call-step.js';
import { type TurnPlan, TurnPlanning } from './turn-planning.js';

/**
 * Executes a held turn step by step, each step committed before the next: a model call (streamed
 * as live deltas; a stored answer settles the turn), a tool call (started, executed, its result
 * stored), or a stop at a waitpoint. `planNextStep` decides from the committed steps alone (and
 * the turn's limits), so a run that resumes or takes over continues exactly where the last
 * committed step left off. Each step returns what it committed; the loop keeps nothing else.
 * How the run ends is RunClosing's: a cancel settles it cancelled, a shutdown releases it to
 * another worker, a lost lease stops it without another write, a model error or a limit fails it.
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
  ) {}

  /**
   * Runs the held turn's steps until the run ends. Returns the session's pending inputs when the
   * turn settled (what its driver has left to claim), or null when the run ended otherwise
   * (waiting, released, fenced): then the driver looks for itself.
   */
  async execute(held: HeldTurn, control: RunControl, leaseSentAt: number): Promise<number | null> {
    const { state, close } = await this.scopes.open(held, control, leaseSentAt);
    let stopTimer = (): void => undefined;
    try {
      await state.publish(held.batch);
      // A turn taken over while it was being cancelled only needs its cancellation finished.
      if (held.turn.cancellationPending) throw new TurnCancelledError();
      stopTimer = await this.scopes.startTurnTimer(held, control);
      await this.runSteps(state, await this.planning.prepare(state, control.abort.signal), control);
    } catch (error) {
      await this.closing.stop(state, control, error);
    } finally {
      stopTimer();
      close();
    }
    return state.pendingInputsAfter;
  }

  /** The step loop: plan from what is committed, do that one step, commit it, plan again. */
  private async runSteps(state: RunState, turn: TurnPlan, control: RunControl): Promise<void> {
    const { budget } = turn;
    let steps: CommittedStep[] = state.held.steps;
    for (;;) {
      // A cancel, a shutdown or a lost lease heard while the last step ran ends the run at this boundary.
      control.abort.signal.throwIfAborted();
      const plan = planNextStep(steps, turn.policy, budget, turn.kind);
      switch (plan.action) {
        case 'fail':
          throw new TurnLimitError(plan.code, plan.message);
        case 'settle':
          state.output = { ...emptyOutput(state.outputIndex), text: plan.text };
          return this.closing.settle(state, { status: 'completed' });
        case 'compact': {
          const step = await this.context.compactNow(state, turn.tools, control);
          if (!step) return;
          steps = [...steps, step];
          continue;
        }
        case 'finish':
          return this.closing.settle(state, { status: 'completed', withoutAnswer: true });
        case 'wait': {
          if (plan.kind !== 'cooperation') {
            await this.toolCall.wait(state, plan);
            return;
          }
          // Members that already settled resolve the wait at once; otherwise the run stops here and their settling wakes the turn.
          const step = await this.cooperation.wait(state, plan);
          if (!step) return;
          steps = [...steps, step];
          continue;
        }
        case 'coordinate': {
          const step = await this.cooperation.coordinate(state, plan);
          if (!step) return;
          budget.toolCalls += 1;
          steps = [...steps, step];
          continue;
        }
        case 'record':
        case 'execute':
        case 'resume_elicitation': {
          const step = await this.toolCall.run(state, plan, turn.tools, turn.declarations, control, budget);
          if (!step || step === WAITING) return;
          if (!plan.started) budget.toolCalls += 1;
          steps = [...steps, step];
          continue;
        }
        case 'call_model': {
          // A safe boundary: every call of the last model step has its result. Steers join here. After
          // a step this run committed (a tool round, seconds long) the queue is looked at, so a steer
          // that arrived meanwhile is never left to the stream; before the first model call (just
          // claimed, or taken over) only an announced one. A failed look leaves the steer to the
          // next heartbeat, which announces it again.
          const look = steps.length > 0 ? state.steerPending() : state.steerWaiting();
          if (await look.catch(() => false)) {
            state.output = emptyOutput(state.outputIndex);
            if (!(await this.closing.yieldToSteers(state, control))) return;
            steps = [];
            continue;
          }
          // The context of the call, compacted first when it would pass the threshold (a committed step).
          const context = await this.context.prepare(state, turn.tools, control);
          if (!context) return;
          budget.modelCalls += 1;
          const called = await this.callModel(state, context, turn, control);
          if (!called) return;
          const { result } = called;
          if (result.yielded) {
            if (!(await this.closing.yieldToSteers(state, control))) return;
            steps = [];
            continue;
          }
          this.context.observe(state, called.context, result.usage);
          if (result.toolCalls.length === 0) {
            return this.closing.settle(state, { status: 'completed', modelCall: { model: state.held.run.model, usage: result.usage, finishReason: result.finishReason, requestJson: result.requestJson } });
          }
          const step = await this.modelCall.commit(state, result);
          if (!step) return;
          steps = [...steps, step];
          continue;
        }
        default:
          // A new planner action without its case here fails to compile.
          throw new Error(`unplanned step ${(plan satisfies never as { action: string }).action}`);
      }
    }
  }

  /**
   * One model call; a provider's context-length error before anything was shown compacts once and
   * retries the call once (a second one fails the turn with context_window_exceeded). Null when the
   * lease is gone.
   */
  private async callModel(state: RunState, context: BuiltContext, turn: TurnPlan, control: RunControl): Promise<{ result: ModelCallResult; context: BuiltContext } | null> {
    try {
      return { result: await this.modelCall.call(state, context, turn.tools, control), context };
    } catch (error) {
      const retry = await this.context.afterOverflow(state, turn.tools, control, error, context);
      if (!retry) return null;
      const result = await this.modelCall.call(state, retry, turn.tools, control).catch((again: unknown) => {
        throw this.context.stillTooLarge(again, state);
      });
      return { result, context: retry };
    }
  }
}
