import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { deleteRowsBatch, prepared, type RowStorage } from '#libs/database';

/**
 * A deleted session is due for purge once its grace period passed: `deleted_at < lifecycle_now() -
 * grace` (the lifecycle clock, so tests cross the grace without waiting it out), unless a
 * `session_lineage` row names it as ancestor: a fork (deleted or not) still reads its history by
 * reference, so a source stays until its last fork is purged (which removes the fork's lineage rows).
 */
const due = (s: string): string => `${s}.deleted_at IS NOT NULL AND ${s}.deleted_at < lifecycle_now() - make_interval(secs => $1::int)
  AND NOT EXISTS (SELECT 1 FROM session_lineage l WHERE l.ancestor_id = ${s}.id)`;
const DUE = due('s');

/**
 * Everything that may still reference a session, by an index on the session each: its `sessions`
 * row goes only when none is left, so the delete never meets a foreign key (inputs, turns, runs,
 * items, files, members) nor leaves a row of a table without one (steps go with their runs,
 * spans, signals, lineage, receipts, the workspace of its own workdir) pointing at nothing.
 */
const nothingLeft = (s: string): string => `NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM session_lineage l WHERE l.ancestor_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM session_lineage l WHERE l.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM items x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM inputs x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM turns x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM model_requests x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM idempotency_receipts x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM cooperation_signals x WHERE x.member_session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM session_events x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM session_spans x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM session_artifacts x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM workspaces x WHERE x.workdir_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM files x WHERE x.session_id = ${s}.id)`;

/**
 * The purge of the session aggregate's own tables (retention kind `deleted_sessions`; libs/retention
 * SessionPurge runs the libs' purges in order and this last). Every statement deletes at most
 * `limit` rows and is safe to repeat: a purge killed between any two leaves rows the next one
 * finds by the same conditions, and never a row whose session is gone (the `sessions` row goes
 * last, only once nothing references it).
 */
@Injectable()
export class SessionPurgeRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Up to `count` due sessions: first those never found stuck, oldest delete first; then, to fill
   * the batch, those a previous batch could not move (`purge_held_at`), least recently tried first,
   * so a session held for long (its project's attachments name it) never starves the rest.
   */
  async due(graceS: number, count: number): Promise<string[]> {
    const rows = (await this.dataSource.query(
      prepared(`(SELECT s.id FROM sessions s WHERE ${DUE} AND s.purge_held_at IS NULL ORDER BY s.deleted_at, s.id LIMIT $2)
       UNION ALL
       (SELECT s.id FROM sessions s WHERE s.purge_held_at IS NOT NULL AND ${DUE} ORDER BY s.purge_held_at, s.id LIMIT $2)
       LIMIT $2`),
      [graceS, count],
    )) as { id: string }[];
    return rows.map((row) => row.id);
  }

  /** Seconds the oldest due session (not held) has been due; 0 when none. One probe of sessions_purge_due_idx. */
  async lagSeconds(graceS: number): Promise<number> {
    const [row] = (await this.dataSource.query(
      prepared(`SELECT coalesce(extract(epoch FROM lifecycle_now() - make_interval(secs => $1::int) - min(s.deleted_at)), 0)::float8 AS lag
         FROM (SELECT s.deleted_at FROM sessions s WHERE ${DUE} AND s.purge_held_at IS NULL ORDER BY s.deleted_at, s.id LIMIT 1) s`),
      [graceS],
    )) as { lag: number }[];
    return Math.max(0, Number(row?.lag ?? 0));
  }

  /**
   * The aggregate's rows of these sessions, children before what they reference, up to `limit`
   * rows per table: receipts (they name inputs), items (they reference runs and turns), steps
   * (with their model requests, by cascade), model requests left without a step, runs, inputs
   * (none that a files row still names: a project's attachment keeps its input), turns, cooperation
   * signals (after the turns they report), lineage rows (a fork's: its sources become purgeable).
   * Runs go before inputs (a run names its inputs) and inputs before turns (an input names its
   * turn), so the durable core's invariants hold at every point of a purge killed midway.
   */
  async purgeRows(sessionIds: string[], limit: number): Promise<RowStorage> {
    const total: RowStorage = { rows: 0, bytes: 0 };
    const ids = [sessionIds];
    const steps: [table: string, where: string][] = [
      ['idempotency_receipts', 't.session_id = ANY($1::uuid[])'],
      ['items', 't.session_id = ANY($1::uuid[])'],
      ['model_requests', 't.session_id = ANY($1::uuid[])'],
      ['run_steps', 't.run_id IN (SELECT r.id FROM runs r WHERE r.session_id = ANY($1::uuid[]))'],
      ['runs', 't.session_id = ANY($1::uuid[])'],
      ['inputs', 't.session_id = ANY($1::uuid[]) AND NOT EXISTS (SELECT 1 FROM files f WHERE f.input_id = t.id)'],
      ['turns', 't.session_id = ANY($1::uuid[])'],
      ['cooperation_signals', 't.member_session_id = ANY($1::uuid[])'],
      // A fork's lineage goes after its workspace (whose base is a version of its source's): then its sources may be due.
      ['session_lineage', 't.session_id = ANY($1::uuid[]) AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.workdir_id = t.session_id)'],
    ];
    for (const [table, where] of steps) {
      const removed = await deleteRowsBatch(this.dataSource, table, where, ids, limit);
      total.rows += removed.rows;
      total.bytes += removed.bytes;
    }
    return total;
  }

  /**
   * The `sessions` rows of these sessions that are still due and that nothing references any more
   * (members before their root: a root waits for its members' rows to go). Answers the ids removed.
   */
  async removeSessions(sessionIds: string[], graceS: number): Promise<{ ids: string[]; bytes: number }> {
    const removed = await deleteRowsBatch(this.dataSource, 'sessions', `t.id = ANY($2::uuid[]) AND ${due('t')} AND ${nothingLeft('t')}`, [graceS, sessionIds], sessionIds.length);
    if (removed.rows === 0) return { ids: [], bytes: 0 };
    const gone = (await this.dataSource.query(prepared(`SELECT x.id FROM unnest($1::uuid[]) AS x(id) WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = x.id)`), [sessionIds])) as {
      id: string;
    }[];
    return { ids: gone.map((row) => row.id), bytes: removed.bytes };
  }

  /** Marks these sessions, where they still exist, as held (their purge could not progress): looked at again after the fresh ones. */
  async hold(sessionIds: string[]): Promise<void> {
    if (sessionIds.length === 0) return;
    await this.dataSource.query(prepared(`UPDATE sessions SET purge_held_at = lifecycle_now() WHERE id = ANY($1::uuid[]) AND deleted_at IS NOT NULL`), [sessionIds]);
  }
}
