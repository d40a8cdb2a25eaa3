import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { assistantItem, type CommittedStep, type ItemEntity, runCheckpoint, ModelCallSteps, RunsRepository, type ToolCallSpec, turnEvents, type Usage } from '#libs/engine';
import type { ResolvedTool } from '#libs/tools';
import { countSpend } from '#libs/usage';
import type { BuiltContext } from './context-manager.js';
import { DurableWrites } from './durable-writes.js';
import { ModelStreams, modelTools } from './model-streams.js';
import type { RunControl } from './run-control.js';
import { LeaseLostError } from './run-errors.js';
import { emptyOutput, type RunState } from './run-scope.js';

/** What one model call produced (or that it yielded to a steer mid-stream). */
export interface ModelCallResult {
  yielded: boolean;
  /** From the request to the end of the stream, in ms: the call's wall time in the usage ledger. */
  wallMs?: number;
  text: string;
  toolCalls: ToolCallSpec[];
  usage: Usage | null;
  /** The provider's finish reason (null when it gave none). */
  finishReason: string | null;
  /**
   * The exact request the call sent, as JSON text, when the deployment audits model requests
   * (MODEL_REQUEST_AUDIT=on): serialised here, before any transaction (never under the session
   * lock, once whatever the write's retries), and recorded with the call's step in its
   * transaction. Null when off: nothing is built or serialised then.
   */
  requestJson: string | null;
}

/**
 * The model-call step: one call, streamed as live deltas, and (when it asked for tools) its commit
 * as a step of the turn. A final answer is not committed here: it settles the turn (RunClosing).
 */
@Injectable()
export class ModelCallStep {
  constructor(
    private readonly streams: ModelStreams,
    private readonly modelSteps: ModelCallSteps,
    private readonly writes: DurableWrites,
    private readonly runs: RunsRepository,
    private readonly config: AppConfig,
  ) {}

  /**
   * One model call, streamed: the assistant item is announced live with its first text or
   * reasoning (a call that shows nothing leaves no item) and written when the step is committed;
   * heartbeats checkpoint its text, so a takeover keeps what clients saw. Retryable provider errors
   * are retried (backoff, Retry-After) as long as nothing was shown yet. A steer that is waiting
   * stops the stream after a delta (`yielded`). Reasoning is complete when the text starts or the
   * stream ends: it is then checkpointed with the item, and only then is reasoning.done sent (a
   * completed block is persisted before its completion boundary).
   */
  async call(state: RunState, context: BuiltContext, tools: ResolvedTool[], control: RunControl): Promise<ModelCallResult> {
    const { held } = state;
    state.output = emptyOutput(state.outputIndex);
    const request = { instructions: held.config.instructions, messages: context.messages, tools: modelTools(tools), signal: control.abort.signal };
    const requestJson = this.config.modelRequestAudit ? JSON.stringify(this.streams.requestOf(held.run.model, request)) : null;
    const result: ModelCallResult = { yielded: false, text: '', toolCalls: [], usage: null, finishReason: null, requestJson };
    let reasoning = '';
    const closeReasoning = async (item: ItemEntity): Promise<void> => {
      state.output.reasoning = reasoning;
      // Retried through a database blip like every write of the run; not saved: the lease is gone.
      const checkpoint = runCheckpoint(item, state.output);
      if (!(await this.writes.retrying(state.lease, () => this.runs.saveCheckpoint(state.lease, checkpoint), true))) {
        this.writes.fenced(state.lease, 'reasoning checkpoint');
        throw new LeaseLostError(`lease of run ${state.lease.runId} is gone`);
      }
      state.live.push(turnEvents.reasoningDone(item, state.outputIndex, reasoning));
    };
    const started = performance.now();
    // A call that ends without its own step (cut by a steer; stopped or failed once the provider
    // answered) is still a call: the yield or settle that ends the run writes its ledger row.
    let answered = false;
    const cut = (): void => {
      state.output.cutCall = { model: held.run.model, usage: result.usage, wallMs: performance.now() - started };
    };
    const stream = this.streams.open(held.run.model, request, state.trace?.attributes);
    try {
      for await (const event of stream) {
        answered = true;
        state.keeper.assertHeld();
        if (event.type === 'tool_call') {
          result.toolCalls.push(event.call);
          continue;
        }
        if (event.type === 'usage') {
          result.usage = event.usage;
          continue;
        }
        if (event.type === 'finish') {
          result.finishReason = event.reason;
          continue;
        }
        let item = state.output.item;
        if (!item) {
          item = assistantItem(newId(), held.turn, state.lease.runId, new Date());
          state.output.item = item;
          state.live.push(turnEvents.item('added', item, state.outputIndex), turnEvents.contentPart('added', item, state.outputIndex, 0, { type: 'output_text', text: '' }));
        }
        if (event.type === 'reasoning_delta') {
          // Reasoning after the text started (rare) would change a block announced complete: not kept.
          if (state.output.reasoning) continue;
          reasoning += event.delta;
          state.live.push(turnEvents.reasoningDelta(item, state.outputIndex, event.delta));
          continue;
        }
        if (reasoning && !state.output.reasoning) await closeReasoning(item);
        state.output.text += event.delta;
        state.live.push(turnEvents.textDelta(item, state.outputIndex, 0, event.delta));
        if (await state.steerWaiting()) {
          result.yielded = true;
          break;
        }
      }
    } catch (error) {
      if (answered) cut();
      throw error;
    }
    if (reasoning && !state.output.reasoning && state.output.item) await closeReasoning(state.output.item);
    await state.live.drain();
    state.keeper.assertHeld();
    state.output.lostDeltas = state.live.lost;
    result.text = state.output.text;
    result.wallMs = performance.now() - started;
    if (result.yielded) cut();
    return result;
  }

  /** Commits a model call that asked for tools: the step, its commentary and its function_call items. Null when the lease is gone. */
  async commit(state: RunState, result: ModelCallResult): Promise<CommittedStep | null> {
    const { held } = state;
    const recorded = await this.writes.commitStep(
      state,
      'model_call',
      () => this.modelSteps.recordModelStep(held, state.lease, state.output, {
          text: result.text,
          toolCalls: result.toolCalls,
          usage: result.usage,
          finishReason: result.finishReason,
          model: held.run.model,
          requestJson: result.requestJson,
          wallMs: result.wallMs,
        }),
    );
    if (!recorded) {
      this.writes.fenced(state.lease, 'model step');
      return null;
    }
    countSpend(recorded.spent);
    state.boundaryAt(recorded.outputIndex);
    state.live.resetLoss();
    await state.publish(recorded.batch);
    return recorded.step;
  }
}
