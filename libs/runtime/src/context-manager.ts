import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { FilesRepository } from '#libs/files';
import { countTokens, MESSAGE_OVERHEAD_TOKENS, ModelError, type ModelMessage, type ModelUsage } from '#libs/models';
import type { ResolvedTool } from '#libs/tools';
import { type CommittedStep, type ContextItems, type ItemEntity, ItemsRepository, itemTokens } from '#libs/engine';
import { ContextCache } from './context-cache.js';
import { CompactionStep } from './compaction-step.js';
import { summaryMessage, summaryMessageTokens } from './compaction-prompt.js';
import { type ContextMeasure, type ContextPolicy, contextPolicy, contextTokens, decideContext } from './context-policy.js';
import { ImageReferences } from './image-references.js';
import { imageTokenAdjustment, ModelImages } from './model-images.js';
import { modelTools } from './model-streams.js';
import { type MessageAttachment, toModelMessages } from './model-context.js';
import type { RunControl } from './run-control.js';
import { TurnLimitError } from './run-errors.js';
import type { RunFact } from './run-history.js';
import type { RunState } from './run-scope.js';

/** The context of one model call: its messages and what they measure. */
export interface BuiltContext {
  messages: ModelMessage[];
  measure: ContextMeasure;
  /** The items from the latest compaction's boundary on, in history order. */
  items: ItemEntity[];
  /** The files bound to the user messages among them, by message id (the summariser lists them too). */
  attachments: ReadonlyMap<string, readonly MessageAttachment[]>;
  compaction: ItemEntity | null;
  pinned: ItemEntity | null;
  /** Index in `items` of the latest user message (null when it is `pinned`, or there is none). */
  latestUserIndex: number | null;
}

/** The provider's context-length error (`context_length_exceeded`, classified by libs/models). */
const OVERFLOW = 'model_context_length_exceeded';

/**
 * The model context of a run: built from the items since the latest compaction (never a fixed
 * window), measured in tokens, and compacted as a committed step when the policy says so (auto
 * before a call past the threshold, once after a provider's context-length error, or the whole of
 * a manual compaction turn). A context that cannot fit fails the turn with `context_window_exceeded`
 * rather than being sent or compacted in a loop.
 */
@Injectable()
export class ContextManager {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly items: ItemsRepository,
    private readonly files: FilesRepository,
    private readonly imageReferences: ImageReferences,
    private readonly modelImages: ModelImages,
    private readonly compaction: CompactionStep,
  ) {}

  private readonly cache = new ContextCache();
  /**
   * User messages known to have no attachments: files bind to a message in the transaction that
   * writes it, so one found without files (or claimed without) never gets any. Bounded; forgetting
   * one only costs a lookup.
   */
  private readonly fileless = new Set<string>();

  policy(state: RunState): ContextPolicy {
    const { config } = state.held;
    return contextPolicy(state.held.run.model, config.agent?.context, config.compaction_mode);
  }

  /** The context of the next model call, compacted first when the policy says so. Null when the lease is gone. */
  async prepare(state: RunState, tools: ResolvedTool[], control: RunControl): Promise<BuiltContext | null> {
    const policy = this.policy(state);
    const built = await this.build(state, tools);
    const fits = contextTokens(built.measure) <= policy.windowTokens;
    // Once the summariser failed in this run, a context that fits is not compacted again before every call.
    if (state.context.summariserFailed && fits) return this.track(state, built, policy);
    const decision = decideContext(built.measure, policy, () => this.summarisable(built, policy));
    if (decision.action === 'too_large') throw new TurnLimitError('context_window_exceeded', decision.message);
    if (decision.action === 'call') return this.track(state, built, policy);
    try {
      if (!(await this.compaction.run(state, built, policy, 'auto', control))) return null;
    } catch (error) {
      // The summariser failed: a context that still fits goes on uncompacted.
      if (!(error instanceof ModelError)) throw error;
      state.context.summariserFailed = true;
      if (fits) return this.track(state, built, policy);
      throw error;
    }
    return this.fitting(state, tools, policy);
  }

  /**
   * After a provider refused the call for its length (with nothing shown yet): compacts once and
   * returns the context to retry with; any other error is rethrown. Null when the lease is gone.
   */
  async afterOverflow(state: RunState, tools: ResolvedTool[], control: RunControl, error: unknown, sent: BuiltContext): Promise<BuiltContext | null> {
    if (!(error instanceof ModelError) || error.code !== OVERFLOW || state.output.item) throw error;
    // The provider's window is smaller than what was sent, whatever the agent says: keep a quarter
    // of what was sent, and let the provider judge the retry.
    const sentTokens = contextTokens(sent.measure);
    const configured = this.policy(state);
    const policy = { ...configured, keepRecentTokens: Math.min(configured.keepRecentTokens, Math.floor(sentTokens / 4)) };
    if (policy.mode !== 'auto' || this.summarisable(sent, policy) === 0) throw tooLarge(error, policy);
    if (!(await this.compaction.run(state, sent, policy, 'overflow', control))) return null;
    return this.track(state, await this.build(state, tools), configured);
  }

  /**
   * The provider refused a call as too long for its window: what the decider reads of it (whether
   * the call showed anything, and how the turn fails when compaction cannot help). Null for any
   * other error.
   */
  overflowOf(state: RunState, error: unknown, sent: BuiltContext, retry: boolean): Extract<RunFact, { type: 'model_overflowed' }> | null {
    if (!(error instanceof ModelError) || error.code !== OVERFLOW) return null;
    const failure = tooLarge(error, this.policy(state));
    return { type: 'model_overflowed', retry, shown: state.output.item !== null, sent, cause: error, error: { code: error.code, message: error.message }, tooLarge: { code: failure.code, message: failure.message } };
  }

  /** A manual compaction turn's one step: everything since the last compaction summarised. Null when the lease is gone. */
  async compactNow(state: RunState, tools: ResolvedTool[], control: RunControl): Promise<CommittedStep | null> {
    const built = await this.build(state, tools);
    return this.compaction.run(state, built, this.policy(state), 'manual', control, state.held.config.compact?.instructions);
  }

  /** The provider's count of the call's prompt corrects the estimates of the run's next calls. */
  observe(state: RunState, built: BuiltContext, usage: ModelUsage | null): void {
    if (!usage || usage.input_tokens <= 0) return;
    const estimate = contextTokens(built.measure) - built.measure.driftTokens;
    state.context.driftTokens = Math.max(0, usage.input_tokens - estimate);
    if (state.context.current) state.context.current.tokens = usage.input_tokens;
  }

  private async fitting(state: RunState, tools: ResolvedTool[], policy: ContextPolicy): Promise<BuiltContext> {
    const built = await this.build(state, tools);
    const tokens = contextTokens(built.measure);
    if (tokens > policy.windowTokens) {
      throw new TurnLimitError('context_window_exceeded', `After compaction the context still needs about ${tokens} tokens, more than the window of ${policy.windowTokens}`);
    }
    return this.track(state, built, policy);
  }

  private track(state: RunState, built: BuiltContext, policy: ContextPolicy): BuiltContext {
    state.context.current = { tokens: contextTokens(built.measure), window_tokens: policy.windowTokens, compaction_item_id: built.compaction?.id ?? null };
    return built;
  }

  /** What a compaction could free: the items before its cut, less the latest user message (kept anyway). */
  private summarisable(built: BuiltContext, policy: ContextPolicy): number {
    const cut = this.compaction.cut(built, policy, 'auto');
    return built.measure.itemTokens.slice(0, cut).reduce((sum, tokens, index) => (index === built.latestUserIndex ? sum : sum + tokens), 0);
  }

  private async build(state: RunState, tools: ResolvedTool[]): Promise<BuiltContext> {
    const { held } = state;
    const sessionId = held.turn.sessionId;
    const { compaction, pinned, items } = await this.contextItems(sessionId);
    const shown = pinned ? [pinned, ...items] : items;
    const summary = compaction?.content[0]?.text ?? null;
    for (const id of held.filelessMessageIds) this.rememberFileless(id);
    const attachments = await this.attachmentsOf(shown);
    const messages: ModelMessage[] = [
      ...(summary ? [summaryMessage(summary)] : []),
      ...(await this.modelImages.prepare(toModelMessages(await this.imageReferences.resolve(shown), attachments))),
    ];
    const imageAdjustTokens = imageTokenAdjustment(messages);
    state.context.baseTokens ??=
      (await countTokens(held.config.instructions)) + MESSAGE_OVERHEAD_TOKENS + (tools.length > 0 ? await countTokens(JSON.stringify(modelTools(tools))) : 0);
    // Stored counts are read as they are; only items written by the api are counted here.
    const counts: number[] = [];
    for (const item of items) counts.push(item.tokens ?? (await itemTokens(item)));
    const latestUserIndex = pinned ? null : items.findLastIndex((item) => item.role === 'user');
    const pinnedTokens = pinned ? await itemTokens(pinned) : 0;
    return {
      messages,
      attachments,
      items,
      compaction,
      pinned,
      latestUserIndex: latestUserIndex === null || latestUserIndex < 0 ? null : latestUserIndex,
      measure: {
        baseTokens: state.context.baseTokens,
        summaryTokens: summary ? await summaryMessageTokens(summary) : 0,
        pinnedTokens,
        latestUserTokens: pinned ? pinnedTokens : latestUserIndex !== null && latestUserIndex >= 0 ? (counts[latestUserIndex] ?? 0) : 0,
        itemTokens: counts,
        driftTokens: state.context.driftTokens,
        lastCompactionTokensAfter: compaction?.content[0]?.compaction?.tokens_after ?? null,
        ...(imageAdjustTokens !== 0 ? { imageAdjustTokens } : {}),
      },
    };
  }

  /** The context's items: the cached ones and what was written since, or all of them read again. */
  private async contextItems(sessionId: string): Promise<ContextItems> {
    const manager = this.dataSource.manager;
    const cached = this.cache.get(sessionId);
    const context = (cached && ContextCache.extend(cached, await this.items.itemsAfter(manager, sessionId, cached.lastSeq))) ?? (await this.items.contextItems(manager, sessionId));
    const tokens = context.items.reduce((sum, item) => sum + (item.tokens ?? 0), 0);
    this.cache.set(sessionId, context, tokens);
    return context;
  }

  /** The files bound to the user messages in the context (consumed inputs' attachments that still exist), by message id. */
  private async attachmentsOf(context: { id: string; role: string | null }[]): Promise<Map<string, MessageAttachment[]>> {
    const byMessage = new Map<string, MessageAttachment[]>();
    const userMessages = context.filter((item) => item.role === 'user' && !this.fileless.has(item.id)).map((item) => item.id);
    if (userMessages.length === 0) return byMessage;
    const withFiles = new Set<string>();
    for (const file of await this.files.filesOfMessages(userMessages)) {
      if (!file.messageId) continue;
      withFiles.add(file.messageId);
      byMessage.set(file.messageId, [...(byMessage.get(file.messageId) ?? []), { id: file.id, filename: file.filename, mimeType: file.mimeType, bytes: file.bytes }]);
    }
    // Files bind only when their message is written, and a bound file leaves `ready` only to be
    // deleted, never to come back: a message with no ready file now has none later either.
    for (const id of userMessages) if (!withFiles.has(id)) this.rememberFileless(id);
    return byMessage;
  }

  private rememberFileless(messageId: string): void {
    if (this.fileless.size >= MAX_FILELESS) this.fileless.clear();
    this.fileless.add(messageId);
  }
}

/** How many fileless message ids a worker remembers (about 5 MB) before it starts over. */
const MAX_FILELESS = 50_000;

function tooLarge(error: ModelError, policy: ContextPolicy): TurnLimitError {
  const why = policy.mode === 'auto' ? 'even after compaction' : `and compaction is ${policy.mode} for this session`;
  return new TurnLimitError('context_window_exceeded', `The provider refused the context as too long ${why}: ${error.message}`);
}
