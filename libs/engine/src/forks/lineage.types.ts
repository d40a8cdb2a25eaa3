/**
 * The types of a fork's lineage. A fork shares its source's history up to a finished turn by
 * reference: one lineage segment per ancestor, each bounding the ancestor's own item and turn seqs
 * the fork inherits. Segments never overlap and grow more distant with depth.
 */
export type ForkPosition = 'after' | 'before';
export const FORK_POSITIONS: readonly ForkPosition[] = ['after', 'before'];

/** The wire's `yuxi.forked_from`. */
export interface ForkedFrom {
  session_id: string;
  turn_id: string;
  position: ForkPosition;
}

/** One ancestor of a fork: its own items with seq <= uptoItemSeq and turns with seq <= uptoTurnSeq are the fork's. */
export interface LineageSegment {
  /** 1: the nearest ancestor. */
  depth: number;
  sessionId: string;
  /** bigint as a string, like ItemEntity.seq */
  uptoItemSeq: string;
  uptoTurnSeq: number;
}

/** A segment of the source's lineage with the ancestor's own base (its fork_item_seq, '0' for a session that is not a fork). */
export interface BasedSegment extends LineageSegment {
  base: string;
  /** The ancestor's own turn base: its fork_turn_seq, 0 for a session that is not a fork (its own turns have seqs above it). */
  turnBase: number;
}

/** Where a fork starts: the turn, the session that ran it, and the inclusive bounds of what is inherited. */
export interface ForkPoint {
  turnId: string;
  /** The turn's session: the source, or one of its ancestors when the turn is inherited. */
  ownerSessionId: string;
  ownerWorkdirId: string;
  position: ForkPosition;
  /** The last inherited item seq of the owner's own items (bigint as a string). */
  itemSeq: string;
  /** T.seq after, T.seq - 1 before. */
  turnSeq: number;
}

/** What the caller asked: at most one of the two. */
export interface ForkAsk {
  afterTurnId?: string;
  beforeTurnId?: string;
}

/** The fork's own fields. */
export interface ForkFields {
  id: string;
  title: string;
  metadata: Record<string, string>;
  /** The fork's workdir: its own id, or the project's for a project session without an environment. */
  workdirId: string;
}
