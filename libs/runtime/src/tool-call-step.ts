import { Injectable } from '@nestjs/common';
import { StepTransitions } from '#libs/lifecycle';
import { metrics, toolSourceLabel } from '#libs/metrics';
import { type ResolvedTool, ToolCatalog, type ToolDeclaration, ToolSourceError } from '#libs/tools';
import type { CreateMessageRequestParams, CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import type { CommittedStep, ToolCallSpec, Usage } from '#libs/turns';
import { DurableWrites } from './durable-writes.js';
import { McpSampling } from './mcp-sampling.js';
import type { RunControl } from './run-control.js';
import { ShuttingDownError, TurnCancelledError } from './run-errors.js';
import { emptyOutput, type RunState } from './run-scope.js';
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
    private readonly sampling: McpSampling,
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
    const recorded = await this.writes.retrying(state.lease, () => this.stepTransitions.recordToolResult(held, state.lease, state.outputIndex, plan.call, outcome), true);
    if (!recorded) return this.fenced(state, 'tool result');
    metrics.toolCall(toolSourceLabel(tools.find((t) => t.name === plan.call.name)?.source), outcome.success ? 'success' : plan.action === 'execute' ? 'error' : 'not_run');
    state.outputIndex = recorded.outputIndex;
    // Nothing is shown between steps: a steer joining at this boundary numbers its items from here.
    state.output = emptyOutput(state.outputIndex);
    await state.publish(recorded.batch);
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
    // A server may ask the session's model for a completion mid-call (MCP sampling): its tokens
    // are the turn's, committed with the call's result.
    let usage: Usage | null = null;
    const sample = async (params: CreateMessageRequestParams, requestSignal: AbortSignal): Promise<CreateMessageResult> => {
      const scope = { model: held.run.model, approvalMode: held.config.tool_approval_mode, serverLabel: tool.source.replace(/^mcp:/, '') };
      const answered = await this.sampling.answer(scope, params, AbortSignal.any([requestSignal, signal.signal]));
      usage = addUsage(usage, answered.usage);
      return answered.result;
    };
    try {
      const outcome = await this.tools.execute(tool, declarations, plan.args, { idempotencyKey: `${held.turn.id}:${call.call_id}`, signal: signal.signal, sessionId: held.turn.sessionId, sample });
      return usage ? { ...outcome, usage } : outcome;
    } catch (error) {
      if (signal.signal.aborted) {
        metrics.toolCall(toolSourceLabel(tool.source), 'aborted');
        throw error;
      }
      if (error instanceof ToolSourceError) return { success: false, output: `${error.code}: ${error.message}`, ...(usage ? { usage } : {}) };
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

function addUsage(total: Usage | null, more: Usage | null): Usage | null {
  if (!more) return total;
  if (!total) return more;
  return {
    input_tokens: total.input_tokens + more.input_tokens,
    output_tokens: total.output_tokens + more.output_tokens,
    cached_tokens: total.cached_tokens + more.cached_tokens,
    total_tokens: total.total_tokens + more.total_tokens,
  };
}
