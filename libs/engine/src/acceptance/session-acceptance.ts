import { SESSION_COLUMNS, type SessionEntity, sessionFromRow } from '../tables/session.entity.js';

/**
 * The SQL an acceptance that writes in one statement composes for the sessions table: a read of
 * the session (owner-scoped) with its row version, and the guarded counter update that takes the
 * session lock in the write. Any change to the row between the two (a turn claimed or settled, a
 * setting changed, another input accepted) fails the guard: the update then matches no row, and
 * the write's other parts, joined with it, write nothing.
 */

/** Columns of `visibleSessionRead`, each qualified with `alias`: the session's, then `row_version` and `workdir_deleted`. */
export function acceptanceSessionColumns(alias: string): string {
  return [...SESSION_COLUMNS.split(',').map((column) => `${alias}.${column.trim()}`), `${alias}.row_version`, `${alias}.workdir_deleted`].join(', ');
}

/**
 * The session `$id` of the owner `$owner` (not deleted), with its row version (`xmin`, the
 * transaction that wrote this version of the row) and whether its project's workdir is deleted
 * (a deleted project's sessions take no new work). `$id` must be a UUID. By its workdir and by its
 * `project_id`, in one probe: a project session's fork with an environment (and its tree's members)
 * has a workdir of its own; older sessions may hold a free label in `project_id`, which names no project.
 */
/** A uuid in text, for a CASE that casts only what is one (the cast of anything else fails the statement). */
const UUID_SQL_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

export function visibleSessionRead(id: string, owner: string): string {
  return `SELECT ${SESSION_COLUMNS}, xmin::text AS row_version,
         EXISTS (SELECT 1 FROM projects p WHERE p.deleted_at IS NOT NULL
           AND p.id IN (sessions.workdir_id, CASE WHEN sessions.project_id ~* '${UUID_SQL_PATTERN}' THEN sessions.project_id::uuid END)) AS workdir_deleted
       FROM sessions WHERE id = ${id} AND owner_id = ${owner} AND deleted_at IS NULL`;
}

/**
 * An input accepted on the session read at version `version`: the next received sequence number
 * (`input_seq`), one more pending input, and a paused queue resumed when `resume`. Parameters from
 * `first`: session id, row version, accepted at, resume. Matches no row when the session changed
 * since it was read (then nothing is written, and the caller takes the locking path).
 */
export function acceptInputGuarded(first: number): string {
  const $ = (n: number): string => `$${first + n - 1}`;
  return `UPDATE sessions SET input_seq = input_seq + 1, pending_input_count = pending_input_count + 1,
         last_active_at = GREATEST(last_active_at, ${$(3)}), queue_paused = queue_paused AND NOT ${$(4)}::boolean
       WHERE id = ${$(1)} AND xmin = ${$(2)}::text::xid RETURNING input_seq`;
}

/** A session as `visibleSessionRead` read it (null: none visible), with its row version for `acceptInputGuarded`. */
export interface ReadForAcceptance {
  session: SessionEntity;
  version: string;
  workdirDeleted: boolean;
}

/** The session of a row of `acceptanceSessionColumns` (null when the row has none: no such visible session). */
export function readForAcceptance(row: Record<string, unknown>): ReadForAcceptance | null {
  if (row.id === null || row.id === undefined) return null;
  return { session: sessionFromRow(row), version: String(row.row_version), workdirDeleted: row.workdir_deleted === true };
}
