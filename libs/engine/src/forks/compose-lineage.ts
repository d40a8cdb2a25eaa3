import { DomainError } from '#libs/errors';
import type { BasedSegment, ForkPoint, LineageSegment } from './lineage.types.js';

/** A segment being composed; `upto` null: unbounded (the source's own history). */
interface Candidate {
  sessionId: string;
  base: bigint;
  turnBase: number;
  uptoItemSeq: bigint | null;
  uptoTurnSeq: number | null;
}

/**
 * The lineage of a new fork of `source` at `point`, a pure function: the source itself (unbounded,
 * its own base) and its ancestors, without those nearer than the point's owner, without those that
 * hold nothing up to the bound (neither an item nor a turn: a turn without items, such as a failed
 * manual compaction, is history too, readable by id through the fork), clamped to the bound and renumbered 1..n. A fork of an inherited
 * turn therefore does not grow the depth. Deeper than `maxDepth`: DomainError fork_depth_exceeded.
 *
 * Why the result is a consistent history: an ancestor's own items all have seqs above its base
 * (its own fork_item_seq) and its bound lies at or below its child's base, so the segments' seq
 * ranges are disjoint and decrease with depth; the fork's own seqs start above the point.
 */
export function composeLineage(
  source: { id: string; forkItemSeq: string | null; forkTurnSeq: number | null; lineage: BasedSegment[] },
  point: ForkPoint,
  maxDepth: number,
): LineageSegment[] {
  const all: Candidate[] = [
    { sessionId: source.id, base: BigInt(source.forkItemSeq ?? '0'), turnBase: source.forkTurnSeq ?? 0, uptoItemSeq: null, uptoTurnSeq: null },
    ...[...source.lineage]
      .sort((a, b) => a.depth - b.depth)
      .map((segment) => ({ sessionId: segment.sessionId, base: BigInt(segment.base), turnBase: segment.turnBase, uptoItemSeq: BigInt(segment.uptoItemSeq), uptoTurnSeq: segment.uptoTurnSeq })),
  ];
  // The owner ran the turn; the sessions nearer than it only hold items above the point.
  const ownerAt = all.findIndex((segment) => segment.sessionId === point.ownerSessionId);
  if (ownerAt < 0) throw new Error(`composeLineage: ${point.ownerSessionId} is neither ${source.id} nor one of its ancestors`);
  const itemBound = BigInt(point.itemSeq);
  const segments = all
    .slice(ownerAt)
    .filter((segment) => segment.base < itemBound || uptoTurn(segment, point) > segment.turnBase)
    .map((segment, index) => ({
      depth: index + 1,
      sessionId: segment.sessionId,
      uptoItemSeq: String(segment.uptoItemSeq === null || segment.uptoItemSeq > itemBound ? itemBound : segment.uptoItemSeq),
      uptoTurnSeq: uptoTurn(segment, point),
    }));
  if (segments.length > maxDepth) {
    throw new DomainError(
      'fork_depth_exceeded',
      `A fork at this point would reach its history through ${segments.length} ancestors; this deployment allows ${maxDepth}. Fork an earlier session of the lineage, or start a new session`,
      { limit: maxDepth },
    );
  }
  return segments;
}

/** The segment's turn bound clamped to the point's. */
function uptoTurn(segment: Candidate, point: ForkPoint): number {
  return segment.uptoTurnSeq === null ? point.turnSeq : Math.min(segment.uptoTurnSeq, point.turnSeq);
}
