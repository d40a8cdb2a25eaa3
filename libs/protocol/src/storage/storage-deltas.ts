/**
 * The pure arithmetic of storage accounting by deltas: what one session's usage row, moving from
 * what it counted to what it counts now, changes in `storage_totals` (its owner's total, project
 * '', and its project's). Unit-tested without a database.
 */

/** What a usage row adds to its owner's totals while it is counted (null: nothing). */
export interface UsageContribution {
  ownerId: string;
  projectId: string | null;
  bytes: number;
  rows: number;
}

/** One total's change: added to its bytes, rows and sessions (negative: taken off). */
export interface TotalDelta {
  ownerId: string;
  projectId: string;
  bytes: number;
  rows: number;
  sessions: number;
}

/**
 * The changes to the totals when rows go from `before` to `after` (each pair one session's row;
 * null where it is not counted), by total, in lock order (owner, then project, '' first: every
 * writer locks totals in this order, and an owner's '' total before its projects', so two never wait
 * on each other). None when nothing changes; otherwise every total the rows touch, even one whose
 * change nets to zero (a session moved between two projects still takes its owner's '' lock first).
 */
export function totalDeltas(changes: { before: UsageContribution | null; after: UsageContribution | null }[]): TotalDelta[] {
  const byKey = new Map<string, TotalDelta>();
  const add = (row: UsageContribution | null, sign: 1 | -1): void => {
    if (row === null) return;
    for (const projectId of row.projectId === null ? [''] : ['', row.projectId]) {
      const key = `${row.ownerId}\u0000${projectId}`;
      const delta = byKey.get(key) ?? { ownerId: row.ownerId, projectId, bytes: 0, rows: 0, sessions: 0 };
      delta.bytes += sign * row.bytes;
      delta.rows += sign * row.rows;
      delta.sessions += sign;
      byKey.set(key, delta);
    }
  };
  for (const { before, after } of changes) {
    add(before, -1);
    add(after, 1);
  }
  const deltas = [...byKey.values()];
  if (deltas.every((delta) => delta.bytes === 0 && delta.rows === 0 && delta.sessions === 0)) return [];
  return deltas.sort((a, b) => (a.ownerId === b.ownerId ? compare(a.projectId, b.projectId) : compare(a.ownerId, b.ownerId)));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
