import type { BasedSegment, ForkPoint, LineageSegment } from './lineage.types.js';

/**
 * The lineage of a new fork of `source` at `point`, a pure function: the source itself (unbounded,
 * its own base) and its ancestors, without those nearer than the point's owner, without those that
 * hold nothing up to the bound, clamped to the bound and renumbered 1..n. A fork of an inherited
 * turn therefore does not grow the depth. Deeper than `maxDepth`: DomainError fork_depth_exceeded.
 */
export function composeLineage(
  source: { id: string; forkItemSeq: string | null; lineage: BasedSegment[] },
  point: ForkPoint,
  maxDepth: number,
): LineageSegment[] {
  void source;
  void point;
  void maxDepth;
  throw new Error('composeLineage: not implemented');
}
