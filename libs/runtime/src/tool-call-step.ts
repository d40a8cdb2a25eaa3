import { Injectable } from '@nestjs/common';
import { StepTransitions, turnEvents } from '#libs/lifecycle';
import { metrics, toolSourceLabel } from '#libs/metrics';
import { type ResolvedTool, ToolCatalog, type ToolDeclaration, type ToolProgress, ToolSourceError } from '#libs/tools';
import type { CommittedStep, ToolCallSpec } from '#libs/turns';
import { DurableWrites } from './durable-writes.js';
import type { RunControl } from './run-control.js';
import { ShuttingDownError, TurnCancelledError } from './run-errors.js';
import { emptyOutput, type RunState } from './run-scope.js';
import { ProgressThrottle } from './progress-throttle.js';
import type { NextStep, PlannedOutcome } from './step-plan.js';

type ToolStep = Extract<NextStep, { action: 'record' | 'execute' }>;

/**
 * The tool-call steps: a server call started, run and its result stored (or a result that needs no
 * run: recorded as planned), and a stop at a waitpoint for calls a person or the client answers.
 */
@Injectable()
export class ToolCallStep {
  constructor(
    private readonly tools: ToolCatalog,
    private readonly stepTransitions: StepTransitions,
    private readonly writes: DurableWrites,
  ) {}

  /**
   * Records the planned result, or runs the call first: a new call is committed `started` before it
   * runs (a takeover then knows it may have taken effect); an idempotent call that started before a
   * takeover runs again under its existing record. The committed step, or null when the lease is gone.
   */
  async run(state: RunState, plan: ToolStep, tools: ResolvedTool[], declarations: ToolDeclaration[], control: RunControl): Promise<CommittedStep | null> {
    const { held } = state;
    let outcome: PlannedOutcome;
    if (plan.action === 'execute') {
      if (!plan.started) {
        const started = await this.writes.retrying(state.lease, () => this.stepTransitions.recordToolStarted(held, state.lease, plan.call), true);
        if (started === 'cancelled') throw new TurnCancelledError();
        if (!started) return this.fenced(state, 'tool start');
      }
      // No side effect through a lease this worker may have lost while the start was committing.
      state.keeper.assertHeld();
      outcome = await this.execute(state, tools, declarations, plan, control);
    } else {
      outcome = plan.outcome;
    }
    // Progress events the call could not publish are a gap the result's batch announces (resync).
    const lostLive = plan.action === 'execute' && state.live.lost;
    const recorded = await this.writes.retrying(state.lease, () => this.stepTransitions.recordToolResult(held, state.lease, state.outputIndex, plan.call, outcome, lostLive), true);
    if (!recorded) return this.fenced(state, 'tool result');
    metrics.toolCall(toolSourceLabel(tools.find((t) => t.name === plan.call.name)?.source), outcome.success ? 'success' : plan.action === 'execute' ? 'error' : 'not_run');
    state.outputIndex = recorded.outputIndex;
    // Nothing is shown between steps: a steer joining at this boundary numbers its items from here.
    state.output = emptyOutput(state.outputIndex);
    await state.publish(recorded.batch);
    if (lostLive) state.live.resetLoss();
    return recorded.step;
  }

  /** Stops the run at a waitpoint: the turn waits for a person or the client. False when the lease is gone. */
  async wait(state: RunState, plan: Extract<NextStep, { action: 'wait' }>): Promise<boolean> {
    const batch = await this.writes.retrying(state.lease, () => this.stepTransitions.suspend(state.held, state.lease, plan.kind, plan.calls), true);
    if (batch === 'cancelled') throw new TurnCancelledError();
    if (!batch) {
      this.writes.fenced(state.lease, 'waitpoint');
      return false;
    }
    if (plan.kind === 'client_tool') metrics.toolCall('client', 'delegated', plan.calls.length);
    state.keeper.pause();
    await state.publish(batch);
    return true;
  }

  /** Runs one server tool call under the stable key `<turn_id>:<call_id>`; a tool that cannot be reached is an error output for the model. */
  private async execute(state: RunState, tools: ResolvedTool[], declarations: ToolDeclaration[], plan: Extract<ToolStep, { action: 'execute' }>, control: RunControl): Promise<PlannedOutcome> {
    const { held } = state;
    const call: ToolCallSpec = plan.call;
    const tool = tools.find((t) => t.name === call.name);
    if (!tool) return { success: false, output: `Unknown tool ${call.name}` };
    // A shutdown lets a call in flight finish (bounded by TOOL_TIMEOUT_MS) and releases the run at
    // the next boundary: aborting it would leave a non-idempotent call's outcome unknown. A cancel
    // or a lost lease stops it at once.
    const signal = new AbortController();
    const forward = (): void => {
      if (!(control.abort.signal.reason instanceof ShuttingDownError)) signal.abort(control.abort.signal.reason);
    };
    if (control.abort.signal.aborted) forward();
    control.abort.signal.addEventListener('abort', forward);
    const progress = new ProgressThrottle<ToolProgress>((report) => state.live.push(turnEvents.toolProgress(held.turn.id, state.lease.runId, call.call_id, report)));
    try {
      const ctx = { idempotencyKey: `${held.turn.id}:${call.call_id}`, signal: signal.signal, sessionId: held.turn.sessionId, onProgress: (report: ToolProgress) => progress.report(report) };
      const outcome = await this.tools.execute(tool, declarations, plan.args, ctx);
      // The last report goes out, and every report is on the stream before the call's output item.
      progress.flush();
      if (progress.sent > 0) await state.live.drain();
      return outcome;
    } catch (error) {
      progress.close();
      if (signal.signal.aborted) {
        metrics.toolCall(toolSourceLabel(tool.source), 'aborted');
        throw error;
      }
      if (error instanceof ToolSourceError) {
        if (progress.sent > 0) await state.live.drain();
        return { success: false, output: `${error.code}: ${error.message}` };
      }
      throw error;
    } finally {
      control.abort.signal.removeEventListener('abort', forward);
    }
  }

  private fenced(state: RunState, what: string): null {
    this.writes.fenced(state.lease, what);
    return null;
  }
}
