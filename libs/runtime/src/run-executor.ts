import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DEFAULT_AGENT_LIMITS } from '#libs/agents';
import { AppConfig, setLogContext, ThrottledLog } from '#libs/config';
import { newId } from '#libs/database';
import { isDependencyUnavailable } from '#libs/errors';
import { EventOutbox, EventPublisher, type OutboxBatch } from '#libs/events';
import { InputsRepository } from '#libs/inputs';
import { metrics, toolSourceLabel } from '#libs/metrics';
import { assistantItem, type HeldTurn, type Outcome, type RunOutput, RunEndings, StepTransitions, turnEvents } from '#libs/lifecycle';
import { FilesRepository } from '#libs/files';
import { ModelError, ModelRegistry, streamWithRetries } from '#libs/models';
import { RunSignals, SessionDispatcher } from '#libs/queue';
import { type ResolvedTool, ToolCatalog, type ToolDeclaration, ToolSourceError, validateToolArguments } from '#libs/tools';
import { type CommittedStep, type Lease, type PublicError, type ToolCallSpec, ItemsRepository, RunsRepository, StepsRepository, type Usage } from '#libs/turns';
import { FencingStats } from './fencing-stats.js';
import { ImageReferences } from './image-references.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LiveEvents } from './live-events.js';
import { measuredProvider } from './model-metrics.js';
import { type MessageAttachment, toModelMessages } from './model-context.js';
import type { RunControl } from './run-control.js';
import { LeaseLostError, ShuttingDownError, TurnCancelledError, TurnLimitError } from './run-errors.js';
import { planNextStep } from './step-plan.js';
import { toolPolicy } from './tool-policy.js';

const CONTEXT_ITEMS = 50;
const SETTLE_RETRY_MAX_MS = 2_000;

/** What one model call produced (or that it yielded to a steer mid-stream). */
interface ModelCallResult {
  yielded: boolean;
  text: string;
  toolCalls: ToolCallSpec[];
  usage: Usage | null;
}

/** The state of one held run while the executor works through its steps. */
interface RunState {
  held: HeldTurn;
  lease: Lease;
  outputIndex: number;
  output: RunOutput;
  keeper: LeaseKeeper;
  live: LiveEvents;
  publish: (batch: OutboxBatch) => Promise<void>;
  steerAnnounced: boolean;
}

/**
 * Executes a held turn step by step, each step committed before the next: a model call (streamed
 * as live deltas; a stored answer settles the turn), a tool call (started, executed, its result
 * stored), or a stop at a waitpoint. `planNextStep` decides from the committed steps alone, so a
 * run that resumes or takes over continues exactly where the last committed step left off. What
 * stops a run decides how it ends: a cancel settles it cancelled, a shutdown releases it to another
 * worker, a lost lease stops it without another write, a model error or a limit fails it.
 */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger(RunExecutor.name);
  private readonly retryLog = new ThrottledLog(new Logger(RunExecutor.name));

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly endings: RunEndings,
    private readonly stepTransitions: StepTransitions,
    private readonly runs: RunsRepository,
    private readonly steps: StepsRepository,
    private readonly items: ItemsRepository,
    private readonly inputs: InputsRepository,
    private readonly models: ModelRegistry,
    private readonly tools: ToolCatalog,
    private readonly outbox: EventOutbox,
    private readonly publisher: EventPublisher,
    private readonly dispatcher: SessionDispatcher,
    private readonly signals: RunSignals,
    private readonly stats: FencingStats,
    private readonly config: AppConfig,
    private readonly files: FilesRepository,
    private readonly imageReferences: ImageReferences,
  ) {}

  async execute(held: HeldTurn, control: RunControl, leaseSentAt: number): Promise<void> {
    const sessionId = held.turn.sessionId;
    // The keeper and the publisher read the run's current state (its lease and shown text change as it goes).
    const state = {
      held,
      lease: held.lease,
      outputIndex: held.outputIndex,
      output: { item: null, outputIndex: held.outputIndex, text: '', lostDeltas: false },
      steerAnnounced: false,
    } as RunState;
    state.keeper = new LeaseKeeper(state.lease, leaseSentAt, {
      leaseMs: this.config.runLeaseMs,
      heartbeatMs: this.config.runHeartbeatMs,
      abort: control.abort,
      // The heartbeat also checkpoints the shown text, and reads the durable state: the fallback
      // when a cancel or steer signal is lost.
      // Only this run's own item is its checkpoint (never the item of the run it yielded from).
      renew: (current) =>
        this.runs.renewLease(
          current,
          this.config.runLeaseMs,
          state.output.item?.runId === current.runId ? { item_id: state.output.item.id, output_index: state.output.outputIndex, text: state.output.text } : null,
        ),
      onRenewed: () => {
        void this.inputs
          .hasPendingSteer(sessionId, held.lastInputSeq)
          .then((pending) => (state.steerAnnounced ||= pending))
          .catch(() => undefined);
      },
    });
    state.live = new LiveEvents(this.publisher, sessionId, state.keeper, () => (this.stats.fencedPublishes += 1));
    state.publish = async (batch: OutboxBatch): Promise<void> => {
      await this.outbox.flush(sessionId, batch);
      const last = batch.rows.at(-1)?.seq;
      if (last !== undefined) state.live.afterSeq = Math.max(state.live.afterSeq, last);
    };
    const stopSteerWatch = await this.signals.onSteer(sessionId, () => (state.steerAnnounced = true)).catch(() => () => undefined);
    state.keeper.start();
    let stopTimer = (): void => undefined;
    try {
      await state.publish(held.batch);
      // A turn taken over while it was being cancelled only needs its cancellation finished.
      if (held.turn.cancellationPending) throw new TurnCancelledError();
      stopTimer = await this.startTurnTimer(held, control);
      await this.runSteps(state, control);
    } catch (error) {
      await this.stop(state, control, error);
    } finally {
      stopTimer();
      state.keeper.stop();
      stopSteerWatch();
    }
  }

  /** The step loop: plan from what is committed, do that one step, commit it, plan again. */
  private async runSteps(state: RunState, control: RunControl): Promise<void> {
    const { held } = state;
    const agent = held.config.agent;
    const limits = { ...DEFAULT_AGENT_LIMITS, ...agent?.limits };
    const declarations = agent?.tools ?? [];
    const tools = declarations.length > 0 ? await this.tools.resolve(declarations, control.abort.signal) : [];
    const policy = toolPolicy(tools, held.config.tool_approval_mode, held.trustedTools);
    const counts = held.fresh ? { modelCalls: 0, toolCalls: 0 } : await this.steps.callCounts(this.dataSource.manager, held.turn.id);
    let steps: CommittedStep[] = held.steps;
    for (;;) {
      // A cancel, a shutdown or a lost lease heard while the last step ran ends the run at this boundary.
      control.abort.signal.throwIfAborted();
      const plan = planNextStep(steps, policy);
      if (plan.action === 'settle') {
        state.output = { item: null, outputIndex: state.outputIndex, text: plan.text, lostDeltas: false };
        await this.settle(state, { status: 'completed' });
        return;
      }
      if (plan.action === 'wait') {
        if (counts.toolCalls + plan.calls.length > limits.max_tool_calls) throw toolLimit(limits.max_tool_calls);
        const batch = await this.retrying(state.lease, () => this.stepTransitions.suspend(held, state.lease, plan.kind, plan.calls), true);
        if (batch === 'cancelled') throw new TurnCancelledError();
        if (!batch) return this.fenced(state.lease, 'waitpoint');
        if (plan.kind === 'client_tool') metrics.toolCall('client', 'delegated', plan.calls.length);
        state.keeper.pause();
        await state.publish(batch);
        return;
      }
      if (plan.action === 'record' || plan.action === 'execute') {
        let outcome = plan.action === 'record' ? plan.outcome : null;
        const known = steps.some((s) => s.kind === 'tool_call' && s.ref === plan.call.call_id);
        if (plan.action === 'execute') {
          // An idempotent call that started before a takeover runs again under its existing record.
          if (!known) {
            if (counts.toolCalls >= limits.max_tool_calls) throw toolLimit(limits.max_tool_calls);
            const started = await this.retrying(state.lease, () => this.stepTransitions.recordToolStarted(held, state.lease, plan.call), true);
            if (started === 'cancelled') throw new TurnCancelledError();
            if (!started) return this.fenced(state.lease, 'tool start');
          }
          // No side effect through a lease this worker may have lost while the start was committing.
          state.keeper.assertHeld();
          outcome = await this.runTool(held, tools, declarations, plan.call, control);
        }
        if (!known) counts.toolCalls += 1;
        const recorded = await this.retrying(state.lease, () => this.stepTransitions.recordToolResult(held, state.lease, state.outputIndex, plan.call, outcome!), true);
        if (!recorded) return this.fenced(state.lease, 'tool result');
        metrics.toolCall(toolSourceLabel(tools.find((t) => t.name === plan.call.name)?.source), outcome!.success ? 'success' : plan.action === 'execute' ? 'error' : 'not_run');
        state.outputIndex = recorded.outputIndex;
        await state.publish(recorded.batch);
        steps = [...steps, { runId: state.lease.runId, kind: 'tool_call', status: 'completed', ref: plan.call.call_id, output: outcome! }];
        continue;
      }
      // call_model
      if (counts.modelCalls >= limits.max_model_calls) {
        throw new TurnLimitError('turn_model_call_limit', `The turn reached its limit of ${limits.max_model_calls} model calls`);
      }
      counts.modelCalls += 1;
      const result = await this.callModel(state, tools, control);
      if (result.yielded) {
        if (!(await this.yieldToSteers(state, control))) return;
        steps = [];
        continue;
      }
      if (result.toolCalls.length === 0) {
        await this.settle(state, { status: 'completed', modelCall: { model: held.run.model, usage: result.usage } });
        return;
      }
      const recorded = await this.retrying(state.lease, () =>
        this.stepTransitions.recordModelStep(held, state.lease, state.output, { text: result.text, toolCalls: result.toolCalls, usage: result.usage, model: held.run.model }),
        true,
      );
      if (!recorded) return this.fenced(state.lease, 'model step');
      state.outputIndex = recorded.outputIndex;
      state.output = { item: null, outputIndex: state.outputIndex, text: '', lostDeltas: false };
      state.live.resetLoss();
      await state.publish(recorded.batch);
      steps = [...steps, { runId: state.lease.runId, kind: 'model_call', status: 'completed', ref: null, output: { text: result.text, tool_calls: recorded.toolCalls } }];
    }
  }

  /**
   * One model call, streamed: the assistant item is announced live with its first text or
   * reasoning (a call that shows nothing leaves no item) and written when the step is committed;
   * heartbeats checkpoint its text, so a takeover keeps what clients saw. Retryable provider errors
   * are retried (backoff, Retry-After) as long as nothing was shown yet.
   */
  private async callModel(state: RunState, tools: ResolvedTool[], control: RunControl): Promise<ModelCallResult> {
    const { held } = state;
    const { provider, model } = this.models.resolve(held.run.model);
    const context = await this.items.contextItems(this.dataSource.manager, held.turn.sessionId, held.turn.id, CONTEXT_ITEMS);
    const attachments = await this.attachmentsOf(context);
    state.output = { item: null, outputIndex: state.outputIndex, text: '', lostDeltas: false };
    const result: ModelCallResult = { yielded: false, text: '', toolCalls: [], usage: null };
    let reasoning = '';
    const request = {
      model,
      instructions: held.config.instructions,
      messages: toModelMessages(await this.imageReferences.resolve(held.turn.sessionId, context), attachments),
      tools: tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
      signal: control.abort.signal,
    };
    const stream = streamWithRetries(measuredProvider(provider), request, {
      maxRetries: this.config.modelMaxRetries,
      maxDelayMs: this.config.modelRetryMaxDelayMs,
      onRetry: (error, attempt, delayMs) => this.retryLog.warn(`model ${held.run.model}: ${error.code}, retry ${attempt + 1} in ${delayMs} ms`),
    });
    for await (const event of stream) {
      state.keeper.assertHeld();
      if (event.type === 'tool_call') {
        result.toolCalls.push(event.call);
        continue;
      }
      if (event.type === 'usage') {
        result.usage = event.usage;
        continue;
      }
      let item = state.output.item;
      if (!item) {
        item = assistantItem(newId(), held.turn, state.lease.runId, new Date());
        state.output.item = item;
        state.live.push(turnEvents.item('added', item, state.outputIndex), turnEvents.contentPart('added', item, state.outputIndex, 0, { type: 'output_text', text: '' }));
      }
      if (event.type === 'reasoning_delta') {
        reasoning += event.delta;
        state.live.push(turnEvents.reasoningDelta(item, state.outputIndex, event.delta));
        continue;
      }
      state.output.text += event.delta;
      state.live.push(turnEvents.textDelta(item, state.outputIndex, 0, event.delta));
      if (state.steerAnnounced) {
        state.steerAnnounced = false;
        if (await this.inputs.hasPendingSteer(held.turn.sessionId, held.lastInputSeq)) {
          result.yielded = true;
          break;
        }
      }
    }
    // Reasoning is shown, not kept: it closes live with the model call.
    if (reasoning && state.output.item) state.live.push(turnEvents.reasoningDone(state.output.item, state.outputIndex, reasoning));
    await state.live.drain();
    state.keeper.assertHeld();
    state.output.lostDeltas = state.live.lost;
    result.text = state.output.text;
    return result;
  }

  /** The files bound to the user messages in the context (consumed inputs' attachments that still exist), by message id. */
  private async attachmentsOf(context: { id: string; role: string | null }[]): Promise<Map<string, MessageAttachment[]>> {
    const byMessage = new Map<string, MessageAttachment[]>();
    const userMessages = context.filter((item) => item.role === 'user').map((item) => item.id);
    for (const file of await this.files.filesOfMessages(userMessages)) {
      if (!file.messageId) continue;
      byMessage.set(file.messageId, [...(byMessage.get(file.messageId) ?? []), { id: file.id, filename: file.filename, mimeType: file.mimeType, bytes: file.bytes }]);
    }
    return byMessage;
  }

  /** Runs one server tool call under the stable key `<turn_id>:<call_id>`; a tool that cannot be reached is an error output for the model. */
  private async runTool(held: HeldTurn, tools: ResolvedTool[], declarations: ToolDeclaration[], call: ToolCallSpec, control: RunControl): Promise<{ success: boolean; output: string }> {
    const tool = tools.find((t) => t.name === call.name);
    const args = tool ? validateToolArguments(tool, call.arguments) : null;
    if (!tool || !args?.ok) return { success: false, output: args && !args.ok ? args.error : `Unknown tool ${call.name}` };
    // A shutdown lets a call in flight finish (bounded by TOOL_TIMEOUT_MS) and releases the run at
    // the next boundary: aborting it would leave a non-idempotent call's outcome unknown. A cancel
    // or a lost lease stops it at once.
    const signal = new AbortController();
    const forward = (): void => {
      if (!(control.abort.signal.reason instanceof ShuttingDownError)) signal.abort(control.abort.signal.reason);
    };
    if (control.abort.signal.aborted) forward();
    control.abort.signal.addEventListener('abort', forward);
    try {
      return await this.tools.execute(tool, declarations, args.value, { idempotencyKey: `${held.turn.id}:${call.call_id}`, signal: signal.signal, sessionId: held.turn.sessionId });
    } catch (error) {
      if (signal.signal.aborted) {
        metrics.toolCall(toolSourceLabel(tool.source), 'aborted');
        throw error;
      }
      if (error instanceof ToolSourceError) return { success: false, output: `${error.code}: ${error.message}` };
      throw error;
    } finally {
      control.abort.signal.removeEventListener('abort', forward);
    }
  }

  /** Yields the run into the next run of the same turn with the waiting steers. False when the run ended instead. */
  private async yieldToSteers(state: RunState, control: RunControl): Promise<boolean> {
    const { held } = state;
    state.keeper.pause();
    const nextRunId = newId();
    // Cancels aimed at the next run are heard from before it exists.
    await control.listen(this.signals, nextRunId).catch(() => undefined);
    const sentAt = LeaseKeeper.now();
    const next = await this.endings.yieldToSteers(held, state.lease, state.output, nextRunId);
    if (next === 'cancelled') {
      await this.settle(state, { status: 'cancelled' });
      return false;
    }
    if (!next || !next.lease) {
      this.fenced(state.lease, 'yield');
      return false;
    }
    state.lease = next.lease;
    held.run = next.run;
    setLogContext({ run_id: next.run.id });
    state.outputIndex = next.outputIndex;
    state.output = { item: null, outputIndex: state.outputIndex, text: '', lostDeltas: false };
    state.keeper.switchTo(state.lease, sentAt);
    state.live.resetLoss();
    await state.publish(next.batch);
    return true;
  }

  /** How a run that stopped before finishing its work ends. */
  private async stop(state: RunState, control: RunControl, error: unknown): Promise<void> {
    await state.live.drain().catch(() => undefined);
    state.output.lostDeltas = state.live.lost;
    const reason: unknown = control.abort.signal.aborted ? control.abort.signal.reason : error;
    if (reason instanceof LeaseLostError || error instanceof LeaseLostError) return this.fenced(state.lease, 'run');
    if (reason instanceof ShuttingDownError) return this.release(state);
    if (reason instanceof TurnCancelledError) return this.settle(state, { status: 'cancelled' });
    // The database stayed unreachable past a step's retries: nothing is written; once the lease
    // expires, recovery continues the turn from its last committed step.
    if (isDependencyUnavailable(error)) {
      this.logger.warn(`run ${state.lease.runId} stopped: the database is unreachable; recovery will continue its turn`);
      return;
    }
    let publicError: PublicError;
    if (reason instanceof TurnLimitError) publicError = { code: reason.code, message: reason.message };
    else if (error instanceof ModelError) publicError = { code: error.code, message: error.message };
    else if (error instanceof ToolSourceError) publicError = { code: error.code, message: error.message };
    else {
      this.logger.error(`run ${state.lease.runId} failed`, error instanceof Error ? error.stack : String(error));
      publicError = { code: 'run_failed', message: 'The run failed unexpectedly' };
    }
    await this.settle(state, { status: 'failed', error: publicError });
  }

  /**
   * The turn's execution-time limit, counting only time spent running (waits at waitpoints and in
   * the queue excluded): what earlier runs of the turn used is subtracted.
   */
  private async startTurnTimer(held: HeldTurn, control: RunControl): Promise<() => void> {
    const limitMs = (held.config.agent?.limits.turn_timeout_s ?? DEFAULT_AGENT_LIMITS.turn_timeout_s) * 1000;
    const usedMs = held.fresh ? 0 : await this.runs.executedMs(this.dataSource.manager, held.turn.id);
    const error = new TurnLimitError('turn_timeout', `The turn ran longer than its limit of ${limitMs / 1000} s`);
    if (usedMs >= limitMs) throw error;
    const timer = setTimeout(() => control.abort.abort(error), limitMs - usedMs);
    timer.unref();
    return () => clearTimeout(timer);
  }

  /**
   * Commits the outcome, retrying while the database is unreachable: the lease (on the database
   * clock) bounds the retries, and once it is gone recovery continues the turn elsewhere.
   */
  private async settle(state: RunState, outcome: Outcome): Promise<void> {
    const { held, lease } = state;
    const settled = await this.retrying(lease, () => this.endings.settle(held, lease, state.output, outcome));
    if (settled === undefined) return;
    if (!settled) return this.fenced(lease, 'settle');
    await state.publish(settled.batch);
    this.logger.log(`turn ${settled.status}`);
  }

  /** Gives the run back at this boundary; another worker continues the turn at once. */
  private async release(state: RunState): Promise<void> {
    const { held, lease } = state;
    const successor = await this.retrying(lease, () => this.endings.release(held, lease, state.output));
    if (!successor) return;
    metrics.runTakenOver('released');
    await state.publish(successor.batch);
    this.logger.log(`run ${lease.runId} released at shutdown; run ${successor.run.id} continues the turn`);
    await this.dispatcher.nudgeTakeover(held.turn.sessionId, successor.run.id).catch(() => undefined);
  }

  /**
   * A write through the lease, retried while the database is unreachable; undefined when it stayed
   * unreachable for longer than the lease (recovery then continues the turn elsewhere).
   */
  private async retrying<T>(lease: Lease, write: () => Promise<T>, rethrow = false): Promise<T | undefined> {
    const deadline = Date.now() + this.config.runLeaseMs;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await write();
      } catch (error) {
        // A step write that fails for another reason fails the run (stop() settles it); a settlement
        // that does is left to recovery.
        if (!isDependencyUnavailable(error) && rethrow) throw error;
        if (!isDependencyUnavailable(error) || Date.now() > deadline) {
          this.logger.error(`run ${lease.runId} could not write; recovery will continue its turn: ${String(error)}`);
          return undefined;
        }
        await sleep(Math.min(100 * 2 ** attempt, SETTLE_RETRY_MAX_MS));
      }
    }
  }

  private fenced(lease: Lease, what: string): void {
    this.stats.fencedWrites += 1;
    this.logger.warn(`run ${lease.runId} stopped at ${what}: its lease is gone (epoch ${lease.epoch}); nothing more is written`);
  }
}

function toolLimit(max: number): TurnLimitError {
  return new TurnLimitError('turn_tool_call_limit', `The turn reached its limit of ${max} tool calls`);
}
