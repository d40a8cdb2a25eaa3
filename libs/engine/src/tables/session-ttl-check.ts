/**
 * `sessions.ttl_check_at`: when the TTL sweep next looks at a session (migration 1767400300000).
 * It is never later than the TTL can act: written as last_active_at + the shortest TTL left to act
 * (the delete's; the archive's while not archived), a lower bound of the real deadline since
 * last_active_at only moves later. Activity does not write it (so the turn path's updates stay
 * HOT); the sweep re-reads last_active_at under the lock and pushes it forward when there was
 * activity since. Null: nothing left to do (no TTL, archived with only an archive TTL, deleted, a
 * member), and the partial index holds no entry.
 *
 * `archiveS` and `deleteS`: SQL for the TTL seconds (the row's columns, or the new values of an
 * UPDATE: its SET sees the old row). Refers to the row's own columns, unqualified.
 */
export function ttlNextCheckSql(archiveS = 'ttl_archive_after_s', deleteS = 'ttl_delete_after_s'): string {
  return `CASE WHEN deleted_at IS NULL AND depth = 0 THEN LEAST(last_active_at + make_interval(secs => ${deleteS}),
    CASE WHEN NOT archived THEN last_active_at + make_interval(secs => ${archiveS}) END) END`;
}

/** ttl_check_at of a new root (not archived), idle from `lastActiveAt`: the shortest TTL after it; null without a TTL. */
export function ttlFirstCheck(lastActiveAt: Date, ttl: { archiveAfterS: number | null; deleteAfterS: number | null } | undefined): Date | null {
  const set = [ttl?.archiveAfterS, ttl?.deleteAfterS].filter((value): value is number => value !== null && value !== undefined);
  return set.length === 0 ? null : new Date(lastActiveAt.getTime() + Math.min(...set) * 1000);
}
