import { Injectable } from '@nestjs/common';
import { newId } from '#libs/database';
import { type CommittedStep, type CompactionCommit, type CompactionRecord, type CompactionTrigger, ModelCallSteps, turnEvents, type Usage } from '#libs/engine';
import { defaultWindowTokens, ModelError } from '#libs/models';
import { setSpanAttributes } from '#libs/telemetry';
import { countSpend } from '#libs/usage';
import type { BuiltContext } from './context-manager.js';
import { compactionCut, contextTokens, type ContextPolicy } from './context-policy.js';
import { summaryMessageTokens, summaryPrompt, transcript } from './compaction-prompt.js';
import { DurableWrites } from './durable-writes.js';
import { ModelStreams } from './model-streams.js';
import type { RunControl } from './run-control.js';
import type { RunState } from './run-scope.js';

/** Of the summariser's window, how much the transcript may take (the rest: prompt and summary). */
const TRANSCRIPT_SHARE = 0.6;
/** Characters per token assumed when cutting a transcript to size (conservative for prose). */
const CHARS_PER_TOKEN = 3;

/**
 * The compaction step: the summariser called on the items before the cut (with the previous
 * summary), then the `compaction` item committed as a step of the run. The summary call is not a
 * side effect: a worker that dies before the commit leaves nothing, and the run that takes the turn
 * over compacts again, so exactly one compaction is committed.
 */
@Injectable()
export class CompactionStep {
  constructor(
    private readonly streams: ModelStreams,
    private readonly modelSteps: ModelCallSteps,
    private readonly writes: DurableWrites,
  ) {}

  /** Where a compaction of this context would cut (items before it are summarised). A manual one summarises everything. */
  cut(built: BuiltContext, policy: ContextPolicy, trigger: CompactionTrigger): number {
    if (trigger === 'manual') return built.items.length;
    return compactionCut(
      built.items.map((item, index) => ({ type: item.type, tokens: built.measure.itemTokens[index] ?? 0, callId: item.content[0]?.call_id })),
      policy.keepRecentTokens,
    );
  }

  /**
   * Compacts: the committed step, or null when the lease is gone. A summariser failure throws its
   * ModelError after announcing it live (the caller decides whether the turn goes on without it).
   */
  run(state: RunState, built: BuiltContext, policy: ContextPolicy, trigger: CompactionTrigger, control: RunControl, instructions?: string): Promise<CommittedStep | null> {
    // Traced: a `compaction` span around the summariser's chat span and the step's commit.
    const { trace } = state;
    if (!trace) return this.compact(state, built, policy, trigger, control, instructions);
    return trace.around('compaction', { 'yuxi.compaction.trigger': trigger, 'yuxi.compaction.model': policy.summarizerModel }, () => this.compact(state, built, policy, trigger, control, instructions));
  }

  private async compact(state: RunState, built: BuiltContext, policy: ContextPolicy, trigger: CompactionTrigger, control: RunControl, instructions?: string): Promise<CommittedStep | null> {
    const { held } = state;
    const cut = this.cut(built, policy, trigger);
    const summarised = built.items.slice(0, cut);
    const kept = built.items.slice(cut);
    if (summarised.length === 0) return this.commit(state, policy, { itemId: newId(), trigger, summary: null, record: null });

    const scope = { turnId: held.turn.id, runId: state.lease.runId, trigger };
    state.live.push(turnEvents.contextCompression('started', scope));
    let summary = '';
    let usage: Usage | null = null;
    const started = performance.now();
    try {
      const maxChars = Math.floor(defaultWindowOrPolicy(policy) * TRANSCRIPT_SHARE * CHARS_PER_TOKEN);
      const stream = this.streams.open(policy.summarizerModel, {
        instructions: summaryPrompt(policy.instructions, instructions),
        messages: [{ role: 'user', text: transcript(built.compaction?.content[0]?.text ?? null, summarised, maxChars, built.attachments) }],
        tools: [],
        signal: control.abort.signal,
        purpose: 'compaction',
      }, state.trace?.attributes);
      for await (const event of stream) {
        state.keeper.assertHeld();
        if (event.type === 'text_delta') summary += event.delta;
        else if (event.type === 'usage') usage = event.usage;
      }
      summary = summary.trim();
      if (!summary) throw new ModelError('model_bad_request', 'The summariser returned an empty summary');
    } catch (error) {
      if (error instanceof ModelError) {
        state.live.push(turnEvents.contextCompression('failed', scope, { error: { code: error.code, message: error.message } }));
        await state.live.drain();
      }
      throw error;
    }
    state.keeper.assertHeld();

    // The latest user message stays verbatim: after the summary when the cut passed it.
    const latestUser = built.latestUserIndex;
    const pinnedAfter = built.pinned ? built.measure.pinnedTokens : latestUser !== null && latestUser < cut ? (built.measure.itemTokens[latestUser] ?? 0) : 0;
    const summaryTokens = await summaryMessageTokens(summary);
    const keptTokens = built.measure.itemTokens.slice(cut).reduce((sum, tokens) => sum + tokens, 0);
    const record: CompactionRecord = {
      trigger,
      through_item_id: summarised.at(-1)?.id ?? null,
      first_kept_item_id: kept[0]?.id ?? null,
      tokens_before: contextTokens(built.measure),
      tokens_after: built.measure.baseTokens + summaryTokens + pinnedAfter + keptTokens,
      model: policy.summarizerModel,
      usage,
    };
    if (state.trace) setSpanAttributes({ 'yuxi.compaction.tokens_before': record.tokens_before, 'yuxi.compaction.tokens_after': record.tokens_after });
    return this.commit(state, policy, { itemId: newId(), trigger, summary, record, wallMs: performance.now() - started });
  }

  private async commit(state: RunState, policy: ContextPolicy, compaction: CompactionCommit): Promise<CommittedStep | null> {
    const recorded = await this.writes.commitStep(state, 'compaction', () => this.modelSteps.recordCompaction(state.held, state.lease, state.outputIndex, compaction));
    if (!recorded) {
      this.writes.fenced(state.lease, 'compaction');
      return null;
    }
    countSpend(recorded.spent);
    state.outputIndex = recorded.outputIndex;
    state.output.outputIndex = recorded.outputIndex;
    // What the turn shows until its next model call measures again (a manual compaction turn has none).
    if (compaction.record) state.context.current = { tokens: compaction.record.tokens_after, window_tokens: policy.windowTokens, compaction_item_id: compaction.itemId };
    await state.publish(recorded.batch);
    return recorded.step;
  }
}

/** The summariser's window: the policy's when it summarises with the agent's own model, else the summariser's default. */
function defaultWindowOrPolicy(policy: ContextPolicy): number {
  return policy.summarizerIsAgentModel ? policy.windowTokens : defaultWindowTokens(policy.summarizerModel);
}
