import type { ContextItems, ItemEntity } from '#libs/engine';

/** How many sessions' contexts a worker keeps (the least recently used go first). */
const MAX_SESSIONS = 256;
/** A context larger than this many tokens is not kept (a session on a very large window). */
const MAX_TOKENS_PER_SESSION = 200_000;

/** What a worker keeps of a session's context between model calls. */
export interface CachedContext extends ContextItems {
  /** The highest item seq it reflects. */
  lastSeq: string;
}

/**
 * The items of recent sessions' contexts, kept by the worker so that the next model call reads
 * only the items written since (ContextManager). Sound because a session's items are written once,
 * never changed, and under the session lock, so their seq order is their commit order: what
 * follows `lastSeq` is exactly what is missing. A new compaction moves the boundary: the entry is
 * rebuilt from the database.
 */
export class ContextCache {
  private readonly entries = new Map<string, CachedContext>();

  get(sessionId: string): CachedContext | undefined {
    const entry = this.entries.get(sessionId);
    if (!entry) return undefined;
    // Most recently used last.
    this.entries.delete(sessionId);
    this.entries.set(sessionId, entry);
    return entry;
  }

  set(sessionId: string, context: ContextItems, tokens: number): void {
    this.entries.delete(sessionId);
    if (tokens > MAX_TOKENS_PER_SESSION) return;
    const last = [context.compaction, context.pinned, ...context.items].reduce<string>((max, item) => (item && BigInt(item.seq) > BigInt(max) ? item.seq : max), '0');
    this.entries.set(sessionId, { ...context, lastSeq: last });
    if (this.entries.size > MAX_SESSIONS) this.entries.delete(this.entries.keys().next().value!);
  }

  /**
   * The cached context extended with the items written since, or null when they hold a compaction
   * (the boundary moved: read it again).
   */
  static extend(cached: CachedContext, newer: ItemEntity[]): ContextItems | null {
    if (newer.some((item) => item.type === 'compaction')) return null;
    const userArrived = newer.some((item) => item.role === 'user');
    return { compaction: cached.compaction, pinned: userArrived ? null : cached.pinned, items: [...cached.items, ...newer] };
  }
}
