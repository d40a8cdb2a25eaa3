import { Injectable } from '@nestjs/common';
import { StoreToolImages } from '#libs/files';
import { type BudgetReached, type CommittedStep, isCommandCall, type RecordedToolResult, RunSuspensions, type SamplingCall, type ToolCallSpec, ToolCallSteps, type ToolEffects, turnEvents } from '#libs/engine';
import { metrics, toolSourceLabel } from '#libs/metrics';
import { countSpend } from '#libs/usage';
import { elicitationQuestions, elicitationRequest, HARNESS_SOURCE, type ResolvedTool, ToolCatalog, type ToolDeclaration, type ToolProgress, ToolSourceError } from '#libs/tools';
import { type CreateMessageRequestParams, type CreateMessageResult, type ElicitRequestParams, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { DurableWrites } from './durable-writes.js';
import { executeToolSpanName, executeToolStart, toolSpanEnd } from './run-spans.js';
import { commandNotRun, HarnessCalls } from './harness-calls.js';
import { CallInFlight, ELICITATION_LOST, type FollowedCall, McpCallsInFlight, RemoteCall } from './mcp-calls-in-flight.js';
import { McpSampling, samplingTokens } from './mcp-sampling.js';
import type { RunControl } from './run-control.js';
import { ShuttingDownError, TurnCancelledError } from './run-errors.js';
import type { RunState } from './run-scope.js';
import { ProgressThrottle } from './progress-throttle.js';
import type { ModelCallAllowance } from './run-history.js';
import type { NextStep, PlannedOutcome } from './step-plan.js';

type ToolStep = Extract<NextStep, { action: 'record' | 'execute' | 'resume_elicitation' }>;

/** A call followed to its end, or to a question it asks the user. */
type Followed = { outcome: PlannedOutcome } | { elicit: ElicitRequestParams; call: FollowedCall };

/** A call of a model step that stopped for the user: the run is at a waitpoint and ends. */
export const WAITING = 'waiting' as const;

export { ELICITATION_LOST };

/** A call of a tool not offered: it never runs (its result is an error for the model), so it changes nothing. */
const NOT_OFFERED: ToolEffects = { sideEffects: false, idempotent: true };

/**
 * The tool-call steps: a server call started, run and its result stored (or a result that needs no
 * run: recorded as planned; a harness tool runs in the session's workspace, HarnessCalls), and a stop at a waitpoint for calls a person or the client answers,
 * or for a question an MCP server asks in the middle of a call.
 */
@Injectable()
export class ToolCallStep {
  constructor(
    private readonly tools: ToolCatalog,
    private readonly toolSteps: ToolCallSteps,
    private readonly suspensions: RunSuspensions,
    private readonly writes: DurableWrites,
    private readonly sampling: McpSampling,
    private readonly inFlight: McpCallsInFlight,
    private readonly toolImages: StoreToolImages,
    private readonly harness: HarnessCalls,
  ) {}

  /**
   * Records the planned result, or runs the call first: a new call is committed `started` before it
   * runs (a takeover then knows it may have taken effect); an idempotent call that started before a
   * takeover runs again under its existing record. The committed step, null when the lease is gone,
   * or WAITING when the call asked the user something and the run stopped at a waitpoint.
   */
  async run(state: RunState, plan: ToolStep, tools: ResolvedTool[], declarations: ToolDeclaration[], control: RunControl, allowance?: ModelCallAllowance): Promise<CommittedStep | typeof WAITING | null> {
    const { held } = state;
    let outcome: PlannedOutcome;
    const tool = tools.find((t) => t.name === plan.call.name);
    if (plan.action === 'execute' || plan.action === 'resume_elicitation') {
      if (!plan.started) {
        const started = await this.writes.commitStep(state, 'tool_call', () => this.toolSteps.recordToolStarted(held, state.lease, plan.call, tool ?? NOT_OFFERED));
        if (started === 'cancelled') throw new TurnCancelledError();
        if (!started) return this.fenced(state, 'tool start');
      }
      // No side effect through a lease this worker may have lost while the start was committing.
      state.keeper.assertHeld();
      // Traced: the call runs in its `execute_tool` span (an MCP server's request carries its traceparent).
      const { trace } = state;
      const followed = trace
        ? await trace.around(executeToolSpanName(plan.call.name), executeToolStart(plan.call.name, plan.call.call_id, tool?.source, plan.args), async (span) => toolSpanEnd(span, await this.execute(state, plan, tool, declarations, control, allowance)))
        : await this.execute(state, plan, tool, declarations, control, allowance);
      if ('elicit' in followed) return this.stopForUser(state, followed.call, plan.call, tool, followed.elicit);
      outcome = followed.outcome;
    } else {
      outcome = plan.outcome;
    }
    // A command's item ends with its result, also when it did not run to its end here (outcome
    // unknown after a takeover, rejected, wrong arguments): the output says why.
    if (!outcome.command && isCommandCall(held.config, plan.call.name)) outcome = { ...outcome, command: commandNotRun(outcome.output) };
    // Never run (invalid arguments, unknown tool, rejected): no tool call in the usage ledger. A call
    // that started (its outcome unknown after a takeover) may have run: it counts.
    const notRun = plan.action === 'record' && !outcome.success && !plan.started;
    const result = { ...(await this.withImages(held.turn.sessionId, plan.call.name, outcome)), ...(notRun ? { notRun } : {}) };
    // Progress events the call could not publish are a gap the result's batch announces (resync).
    const lostLive = plan.action !== 'record' && state.live.lost;
    let recorded: Awaited<ReturnType<ToolCallSteps['recordToolResult']>> | undefined;
    try {
      recorded = await this.writes.commitStep(state, 'tool_call', () => this.toolSteps.recordToolResult(held, state.lease, state.outputIndex, plan.call, result, lostLive));
    } finally {
      // Files bound with a committed result are no longer staged: this removes only what no result names.
      if (!recorded && result.fileIds?.length) await this.toolImages.discard(result.fileIds);
    }
    if (!recorded) return this.fenced(state, 'tool result');
    countSpend(recorded.spent);
    metrics.toolCall(toolSourceLabel(tool?.source), outcome.success ? 'success' : plan.action === 'record' ? 'not_run' : 'error');
    state.boundaryAt(recorded.outputIndex);
    await state.publish(recorded.batch);
    if (lostLive) state.live.resetLoss();
    return recorded.step;
  }

  /** Runs the call (or hands the user's answer to it) and follows it to its end, or to its next question to the user. */
  private async execute(
    state: RunState,
    plan: Extract<ToolStep, { action: 'execute' | 'resume_elicitation' }>,
    tool: ResolvedTool | undefined,
    declarations: ToolDeclaration[],
    control: RunControl,
    allowance?: ModelCallAllowance,
  ): Promise<Followed> {
    const call =
      plan.action === 'execute'
        ? tool?.source === HARNESS_SOURCE
          ? this.harness.start(state, tool, plan)
          : this.start(state, tool, declarations, plan, allowance)
        : await this.resumed(state, tool, declarations, plan, allowance);
    return call instanceof CallInFlight || call instanceof RemoteCall ? this.follow(state, call, plan.call, tool, control) : { outcome: call };
  }

  /**
   * The images the tool returned, staged as session files to be bound with its result, and a note
   * in the output for each media part that is not shown (audio, a refused or unstorable image).
   */
  private async withImages(sessionId: string, toolName: string, outcome: PlannedOutcome): Promise<RecordedToolResult> {
    const { media, ...recorded } = outcome;
    if (!media?.length) return recorded;
    const { fileIds, notes } = await this.toolImages.stage(sessionId, toolName, media);
    return { ...recorded, output: notes.length > 0 ? `${outcome.output}\n${notes.join('\n')}` : outcome.output, fileIds };
  }

  /** Stops the run at a waitpoint: the turn waits for a person or the client. False when the lease is gone. */
  async wait(state: RunState, plan: Extract<NextStep, { action: 'wait' }>): Promise<boolean> {
    const batch = await this.writes.commitStep(state, 'waitpoint', () => this.suspensions.suspend(state.held, state.lease, plan.kind, plan.calls));
    if (batch === 'cancelled') throw new TurnCancelledError();
    if (!batch) {
      this.writes.fenced(state.lease, 'waitpoint');
      return false;
    }
    if (plan.kind === 'client_tool') metrics.toolCall('client', 'delegated', plan.calls.length);
    state.trace?.waiting(plan.kind);
    state.keeper.pause();
    await state.publish(batch);
    return true;
  }

  /**
   * Starts one server tool call under the stable key `<turn_id>:<call_id>`; a tool that cannot be
   * reached is an error output for the model. A server may ask the session's model for a completion
   * mid-call (MCP sampling): its tokens are the turn's, committed with the call's result.
   */
  private start(state: RunState, tool: ResolvedTool | undefined, declarations: ToolDeclaration[], plan: { call: ToolCallSpec; args: Record<string, unknown> }, allowance?: ModelCallAllowance): CallInFlight | PlannedOutcome {
    const { held } = state;
    if (!tool) return { success: false, output: `Unknown tool ${plan.call.name}` };
    const idempotencyKey = `${held.turn.id}:${plan.call.call_id}`;
    return new CallInFlight(idempotencyKey, async (call) => {
      const started = performance.now();
      const sampling: SamplingCall[] = [];
      const sample = async (params: CreateMessageRequestParams, requestSignal: AbortSignal): Promise<CreateMessageResult> => {
        const scope = { model: held.run.model, approvalMode: held.config.tool_approval_mode, serverLabel: tool.source.replace(/^mcp:/, ''), trace: state.trace?.attributes };
        // A completion for the server is one of the turn's model calls: refused where a budget of the
        // turn has no room (the turn stops at its next model call's check), or past the turn's limit.
        const reached = await allowance?.budgets(samplingTokens(params));
        if (reached) throw samplingOverBudget(reached);
        if (allowance && !allowance.take()) throw samplingOverLimit(allowance.limit);
        const asked = performance.now();
        const answered = await this.sampling.answer(scope, params, AbortSignal.any([requestSignal, call.controller.signal]));
        sampling.push({ model: held.run.model, usage: answered.usage, wallMs: performance.now() - asked });
        return answered.result;
      };
      try {
        const ctx = { idempotencyKey, signal: call.controller.signal, sessionId: held.turn.sessionId, sample, elicit: call.elicit, onProgress: (report: ToolProgress) => call.onProgress?.(report) };
        const outcome = await this.tools.execute(tool, declarations, plan.args, ctx);
        return { ...outcome, wallMs: performance.now() - started, ...(sampling.length > 0 ? { sampling } : {}) };
      } catch (error) {
        if (!call.controller.signal.aborted && error instanceof ToolSourceError) {
          return { success: false, output: `${error.code}: ${error.message}`, wallMs: performance.now() - started, ...(sampling.length > 0 ? { sampling } : {}) };
        }
        throw error;
      }
    });
  }

  /**
   * The call the user answered: handed the answer where this worker holds it, or where another
   * worker does (that one answers the server and reports back); else run again (idempotent) or its
   * outcome unknown.
   */
  private async resumed(
    state: RunState,
    tool: ResolvedTool | undefined,
    declarations: ToolDeclaration[],
    plan: Extract<ToolStep, { action: 'resume_elicitation' }>,
    allowance?: ModelCallAllowance,
  ): Promise<CallInFlight | RemoteCall | PlannedOutcome> {
    const key = `${state.held.turn.id}:${plan.call.call_id}`;
    const call = this.inFlight.take(key);
    const { action, content } = plan.response;
    const answer = content ? { action, content } : { action };
    // Held here: answered if it still asks, and followed either way — a call that stopped asking
    // (its session ended, the server withdrew the question) ends with its own outcome, never run twice.
    if (call) {
      call.answer(answer);
      return call;
    }
    const remote = await this.inFlight.reach(key, answer);
    if (remote) return remote;
    if (plan.idempotent) return this.start(state, tool, declarations, plan, allowance);
    return { success: false, output: ELICITATION_LOST };
  }

  /**
   * Follows a call to its end, or to its next question to the user. A shutdown lets a call in
   * flight finish (bounded by TOOL_TIMEOUT_MS) and releases the run at the next boundary: aborting
   * it would leave a non-idempotent call's outcome unknown. A cancel or a lost lease stops it at once.
   */
  private async follow(
    state: RunState,
    call: FollowedCall,
    spec: ToolCallSpec,
    tool: ResolvedTool | undefined,
    control: RunControl,
  ): Promise<Followed> {
    const forward = (): void => {
      if (!(control.abort.signal.reason instanceof ShuttingDownError)) call.controller.abort(control.abort.signal.reason);
    };
    if (control.abort.signal.aborted) forward();
    control.abort.signal.addEventListener('abort', forward);
    // The server's progress reports, live on the stream of the run that follows the call now.
    const progress = new ProgressThrottle<ToolProgress>((report) => state.live.push(turnEvents.toolProgress(state.held.turn.id, state.lease.runId, spec.call_id, report)));
    call.onProgress = (report) => progress.report(report);
    try {
      const next = await call.next();
      // The last report goes out, and every report is on the stream before what the call led to.
      progress.flush();
      if (progress.sent > 0) await state.live.drain();
      return 'elicit' in next ? { elicit: next.elicit, call } : next;
    } catch (error) {
      progress.close();
      if (call.controller.signal.aborted) metrics.toolCall(toolSourceLabel(tool?.source), 'aborted');
      throw error;
    } finally {
      call.onProgress = null;
      control.abort.signal.removeEventListener('abort', forward);
    }
  }

  /**
   * The server asked the user something mid-call: the turn stops at a question waitpoint (the
   * call's `started` step stays) and the call is held open in this worker until the answer comes.
   * Where the waitpoint cannot be committed (cancel, lost lease), the server is told `cancel`.
   */
  private async stopForUser(state: RunState, call: FollowedCall, spec: ToolCallSpec, tool: ResolvedTool | undefined, params: ElicitRequestParams): Promise<typeof WAITING | null> {
    const request = elicitationRequest(spec.call_id, (tool?.source ?? '').replace(/^mcp:/, ''), params);
    // Where the turn cannot stop here, nobody will answer: the server hears `cancel` and the call is
    // abandoned (notifications/cancelled), never left open.
    const abandon = (): void => {
      call.answer({ action: 'cancel' });
      call.controller.abort(new Error('the elicitation waitpoint could not be committed'));
    };
    const batch = await this.writes
      .commitStep(state, 'waitpoint', () => this.suspensions.suspendForElicitation(state.held, state.lease, request, elicitationQuestions(request)))
      .catch((error: unknown) => {
        abandon();
        throw error;
      });
    if (batch === 'cancelled' || !batch) {
      abandon();
      if (batch === 'cancelled') throw new TurnCancelledError();
      return this.fenced(state, 'elicitation waitpoint');
    }
    // Held where it is open: here, or by the worker that holds it for this run's waitpoint. Held
    // (its channel subscribed) before the waitpoint is published: an answer may follow at once.
    if (call instanceof RemoteCall) call.held(state.lease.runId);
    else if (call instanceof CallInFlight) await this.inFlight.hold(call, state.lease.runId);
    state.trace?.waiting('question');
    state.keeper.pause();
    await state.publish(batch);
    return WAITING;
  }

  private fenced(state: RunState, what: string): null {
    this.writes.fenced(state.lease, what);
    return null;
  }
}

/** The server's sampling request when the turn has spent its model calls (the server reports it to its tool as an error). */
function samplingOverLimit(limit: number): McpError {
  return new McpError(ErrorCode.InvalidRequest, `sampling refused: the turn reached its limit of ${limit} model calls`);
}

/** The server's sampling request when a budget of the turn has no room for another model call. */
function samplingOverBudget(reached: BudgetReached): McpError {
  return new McpError(ErrorCode.InvalidRequest, `sampling refused: budget ${reached.budgetId} reached its ${reached.limit} limit (${reached.spent} of ${reached.limitValue})`);
}
