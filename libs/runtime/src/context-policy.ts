import type { AgentContext, CompactionMode } from '#libs/agents';
import { defaultWindowTokens } from '#libs/models';
import { isCallItem } from '#libs/engine';

/**
 * How a run manages its model context, as pure decisions (unit-tested without a database): the
 * effective policy of an agent and session, whether the next model call needs a compaction first,
 * and which items a compaction summarises. Orchestrated by ContextManager (context-manager.ts).
 */

export interface ContextPolicy {
  windowTokens: number;
  mode: CompactionMode;
  /** Compact before a model call whose context would pass this many tokens. */
  thresholdTokens: number;
  /** Roughly how much recent history a compaction keeps verbatim. */
  keepRecentTokens: number;
  /** A compaction must free at least this much, or it is not worth a call (and cannot end a loop). */
  minGainTokens: number;
  /** The summariser, `provider:model`. */
  summarizerModel: string;
  summarizerIsAgentModel: boolean;
  /** Extra instructions for the summariser (the agent's). */
  instructions: string;
}

export const DEFAULT_THRESHOLD = 0.8;

/** The effective policy: the agent's `context`, the session's mode override, defaults for the rest. */
export function contextPolicy(agentModel: string, context: AgentContext | undefined, sessionMode: CompactionMode | undefined): ContextPolicy {
  const windowTokens = context?.window_tokens ?? defaultWindowTokens(agentModel);
  const compaction = context?.compaction;
  const threshold = compaction?.threshold ?? DEFAULT_THRESHOLD;
  return {
    windowTokens,
    mode: sessionMode ?? compaction?.mode ?? 'auto',
    thresholdTokens: Math.floor(windowTokens * threshold),
    keepRecentTokens: Math.min(compaction?.keep_recent_tokens ?? Math.floor(windowTokens * 0.25), Math.floor(windowTokens * threshold * 0.6)),
    minGainTokens: Math.max(64, Math.floor(windowTokens * 0.05)),
    summarizerModel: compaction?.model ?? agentModel,
    summarizerIsAgentModel: (compaction?.model ?? agentModel) === agentModel,
    instructions: compaction?.instructions ?? '',
  };
}

/** The size of a context, by part. */
export interface ContextMeasure {
  /** The instructions and the tools offered. */
  baseTokens: number;
  /** The latest compaction's summary (0 without one). */
  summaryTokens: number;
  /** The latest user message when it is shown after the summary (0 when it is among the items). */
  pinnedTokens: number;
  /** The latest user message, wherever it is: with the base, what no compaction can shrink. */
  latestUserTokens: number;
  itemTokens: number[];
  /** The provider counted this many more tokens than the estimate for the run's last call (0 when fewer or unknown). */
  driftTokens: number;
  /** tokens_after of the latest compaction of the session, when the context starts with its summary. */
  lastCompactionTokensAfter: number | null;
  /**
   * The images as sent, counted by their size, less what the items' estimates counted for them
   * (IMAGE_TOKENS each): positive for large images, negative for small or left-out ones (see
   * model-images imageTokenAdjustment). Absent: 0.
   */
  imageAdjustTokens?: number;
}

export function contextTokens(measure: ContextMeasure): number {
  return measure.baseTokens + measure.summaryTokens + measure.pinnedTokens + measure.itemTokens.reduce((sum, tokens) => sum + tokens, 0) + measure.driftTokens + (measure.imageAdjustTokens ?? 0);
}

export type ContextDecision =
  | { action: 'call' }
  | { action: 'compact' }
  /** Nothing a compaction could free would make the call fit: the turn fails with `context_window_exceeded`. */
  | { action: 'too_large'; message: string };

/**
 * Before a model call: call it, compact first, or give up. Auto compaction starts at the threshold
 * when the mode allows it, there is enough to free (`summarisable` tokens beyond the minimum gain)
 * and the context grew by the minimum gain since the last compaction (a cooldown: a summary that
 * could not bring the context under the threshold is not redone before every call). A context that
 * does not fit the window and cannot be compacted fails instead of being sent.
 */
export function decideContext(measure: ContextMeasure, policy: ContextPolicy, summarisable: number | (() => number)): ContextDecision {
  const tokens = contextTokens(measure);
  const floor = measure.baseTokens + measure.latestUserTokens;
  if (floor > policy.windowTokens) {
    return { action: 'too_large', message: `The latest message with the instructions and tools needs about ${floor} tokens, more than the window of ${policy.windowTokens}` };
  }
  // The common case, well within the threshold, needs no cut computed.
  if (tokens <= policy.thresholdTokens) return { action: 'call' };
  const canFree = (typeof summarisable === 'function' ? summarisable() : summarisable) >= policy.minGainTokens;
  const grown = measure.lastCompactionTokensAfter === null || tokens - measure.lastCompactionTokensAfter >= policy.minGainTokens;
  if (policy.mode === 'auto' && tokens > policy.thresholdTokens && canFree && grown) return { action: 'compact' };
  if (tokens <= policy.windowTokens) return { action: 'call' };
  if (policy.mode === 'auto' && canFree) return { action: 'compact' };
  const why =
    policy.mode === 'auto'
      ? 'and compaction cannot free enough of it (the latest message, the instructions and the tools alone may not fit)'
      : `and compaction is ${policy.mode === 'off' ? 'off' : 'manual'} for this session`;
  return { action: 'too_large', message: `The context needs about ${tokens} tokens, more than the window of ${policy.windowTokens}, ${why}` };
}

/** An item as the compaction planner sees it. */
export interface PlannedItem {
  type: string;
  tokens: number;
  /** function_call and function_call_output items: the call they belong to. */
  callId?: string;
}

/**
 * Where a compaction cuts: items before the returned index are summarised, the rest kept verbatim.
 * It keeps as many of the latest items as fit in `keepRecentTokens`, and never cuts between a
 * function call and its output (the cut moves later, keeping less, until no pair straddles it). 0 means nothing
 * can be summarised.
 */
export function compactionCut(items: readonly PlannedItem[], keepRecentTokens: number): number {
  let cut = items.length;
  let kept = 0;
  while (cut > 0 && kept + (items[cut - 1]?.tokens ?? 0) <= keepRecentTokens) {
    cut -= 1;
    kept += items[cut]?.tokens ?? 0;
  }
  // Move the cut later (keep less) until it splits no call from its output.
  while (cut < items.length && splitsPair(items, cut)) cut += 1;
  return cut;
}

function splitsPair(items: readonly PlannedItem[], cut: number): boolean {
  const before = new Set(items.slice(0, cut).flatMap((item) => (isCallItem(item.type) && item.callId ? [item.callId] : [])));
  return items.slice(cut).some((item) => item.type === 'function_call_output' && item.callId !== undefined && before.has(item.callId));
}
