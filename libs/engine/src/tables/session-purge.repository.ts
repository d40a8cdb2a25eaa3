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
const dueByTime = (s: string): string => `${s}.deleted_at IS NOT NULL AND ${s}.deleted_at < lifecycle_now() - make_interval(secs => $1::int)`;
const pinned = (s: string): string => `EXISTS (SELECT 1 FROM session_lineage l WHERE l.ancestor_id = ${s}.id)`;
const due = (s: string): string => `${dueByTime(s)} AND NOT ${pinned(s)}`;
const DUE = due('s');
const DUE_BY_TIME = dueByTime('s');
const PINNED = pinned('s');

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
  AND NOT EXISTS (SELECT 1 FROM files x WHERE x.session_id = ${s}.id)
  AND NOT EXISTS (SELECT 1 FROM budgets x WHERE x.scope_kind = 'session' AND x.scope_id = ${s}.id::text)`;

/**
 * Which rows of a parent table a batch may delete: those no child row references any more, each a
 * probe of an index the child has on its key anyway (items_run_idx, run_steps_run_idx, items_turn_idx,
 * runs and run_steps UNIQUE (turn_id, seq), workspace_versions_turn_idx, session_artifacts_turn_idx;
 * runs by session, runs_session_epoch_idx). Foreign keys with no ON DELETE (items → runs and turns,
 * runs → turns, workspace versions and artifacts → turns) would fail the whole statement otherwise;
 * the cascading ones (steps → runs and turns, model requests → steps and runs) are gated too, so a
 * statement never deletes more than `limit` rows plus its own cascades. By value, not by key: an
 * input waits for every run of its session (a run names its inputs, invariant run_inputs_exist), and
 * a turn for every input of its session (a consumed input names its turn, consumed_input_has_turn):
 * per session, one probe of the first index entry, where per row the probe would read every input
 * left in the session. So the session an attachment of its project keeps (its input stays with the
 * file) keeps its turns too, and both invariants hold at every point of a purge.
 */
const PARENT_GATES = {
  runs: `NOT EXISTS (SELECT 1 FROM items x WHERE x.run_id = t.id) AND NOT EXISTS (SELECT 1 FROM run_steps x WHERE x.run_id = t.id)`,
  inputs: `NOT EXISTS (SELECT 1 FROM files f WHERE f.input_id = t.id) AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.session_id = t.session_id)`,
  turns: `NOT EXISTS (SELECT 1 FROM inputs x WHERE x.session_id = t.session_id) AND NOT EXISTS (SELECT 1 FROM items x WHERE x.turn_id = t.id) AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.turn_id = t.id)
    AND NOT EXISTS (SELECT 1 FROM run_steps x WHERE x.turn_id = t.id) AND NOT EXISTS (SELECT 1 FROM workspace_versions x WHERE x.turn_id = t.id)
    AND NOT EXISTS (SELECT 1 FROM session_artifacts x WHERE x.turn_id = t.id)`,
  // A member's ended turn keeps its signal while the turn exists (invariant member_turn_end_signalled).
  cooperation_signals: `(t.turn_id IS NULL OR NOT EXISTS (SELECT 1 FROM turns x WHERE x.id = t.turn_id))`,
};

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
   * the batch, those held (`purge_held_at`) whose hold has run out, least recently held first, so a
   * session held for long (its project's attachments name it) never starves the rest.
   *
   * `purge_held_at` is when a held session is looked at again: at once for one a batch could not
   * move (re-held each time it moves nothing), later for one whose purge failed (SessionPurge), and
   * `pinS` later for a source a fork's lineage still names (pinned): each leaves the due index, and
   * a held one waits outside the range the held branch reads, so neither branch walks past the same
   * blocked rows every batch. The pin is taken here, on the candidates each branch read (one walk,
   * no second scan); purging the fork's lineage takes it off (purgeLineage), and its expiry is the
   * safety net for a lineage row that went while the pin was being taken. `pinned`: how many this
   * call pinned (a batch that found only pinned sessions has still moved the queue on).
   */
  async due(graceS: number, count: number, pinS: number): Promise<{ ids: string[]; pinned: number }> {
    const rows = (await this.dataSource.query(
      prepared(`WITH fresh AS (
           SELECT s.id, ${PINNED} AS pinned FROM sessions s
           WHERE ${DUE_BY_TIME} AND s.purge_held_at IS NULL ORDER BY s.deleted_at, s.id LIMIT $2),
         held AS (
           SELECT s.id, ${PINNED} AS pinned, s.purge_held_at FROM sessions s
           WHERE s.purge_held_at IS NOT NULL AND s.purge_held_at <= lifecycle_now() AND ${DUE_BY_TIME} ORDER BY s.purge_held_at, s.id LIMIT $2),
         pin AS (
           UPDATE sessions s SET purge_held_at = LEAST(now(), lifecycle_now()) + make_interval(secs => $3::int)
           WHERE s.id IN (SELECT id FROM fresh WHERE pinned UNION ALL SELECT id FROM held WHERE pinned) RETURNING 1)
       SELECT p.pinned, c.id FROM (SELECT count(*)::int AS pinned FROM pin) p
       LEFT JOIN LATERAL (
         SELECT id FROM (
           (SELECT f.id, 0 AS part, NULL::timestamptz AS held_at FROM fresh f WHERE NOT f.pinned)
           UNION ALL
           (SELECT h.id, 1, h.purge_held_at FROM held h WHERE NOT h.pinned)) u
         ORDER BY u.part, u.held_at, u.id LIMIT $2) c ON true`),
      [graceS, count, pinS],
    )) as { pinned: number; id: string | null }[];
    return { ids: rows.flatMap((row) => (row.id === null ? [] : [row.id])), pinned: Number(rows[0]?.pinned ?? 0) };
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
   *
   * The order alone is not enough: each statement stops at `limit` rows, so a parent's statement
   * may run while some of its children are still there (500 items of 2,000 gone, then the runs).
   * So each parent's statement takes only parents with no child left (PARENT_GATES, one index
   * probe per row, by the keys' own indexes): a batch never meets a foreign key (23503) however
   * its rows are spread, and what it leaves the next batch takes.
   */
  async purgeRows(sessionIds: string[], limit: number): Promise<RowStorage> {
    const total: RowStorage = { rows: 0, bytes: 0 };
    const ids = [sessionIds];
    const steps: [table: string, where: string][] = [
      ['idempotency_receipts', 't.session_id = ANY($1::uuid[])'],
      ['items', 't.session_id = ANY($1::uuid[])'],
      ['model_requests', 't.session_id = ANY($1::uuid[])'],
      ['run_steps', 't.run_id IN (SELECT r.id FROM runs r WHERE r.session_id = ANY($1::uuid[]))'],
      ['runs', `t.session_id = ANY($1::uuid[]) AND ${PARENT_GATES.runs}`],
      ['inputs', `t.session_id = ANY($1::uuid[]) AND ${PARENT_GATES.inputs}`],
      ['turns', `t.session_id = ANY($1::uuid[]) AND ${PARENT_GATES.turns}`],
      ['cooperation_signals', `t.member_session_id = ANY($1::uuid[]) AND ${PARENT_GATES.cooperation_signals}`],
    ];
    for (const [table, where] of steps) {
      const removed = await deleteRowsBatch(this.dataSource, table, where, ids, limit);
      total.rows += removed.rows;
      total.bytes += removed.bytes;
    }
    const lineage = await this.purgeLineage(sessionIds, limit);
    total.rows += lineage.rows;
    total.bytes += lineage.bytes;
    return total;
  }

  /**
   * A fork's lineage rows, after its workspace (whose base is a version of its source's): then its
   * sources may be due. The sources this frees lose their pin (`due` held them, pinned, out of the
   * due index while a lineage row named them): back in the due index at once, where the next `due`
   * pins again any that another fork still names.
   */
  private async purgeLineage(sessionIds: string[], limit: number): Promise<RowStorage> {
    const ancestors = (await this.dataSource.query(prepared(`SELECT DISTINCT l.ancestor_id AS id FROM session_lineage l WHERE l.session_id = ANY($1::uuid[])`), [sessionIds])) as {
      id: string;
    }[];
    if (ancestors.length === 0) return { rows: 0, bytes: 0 };
    const removed = await deleteRowsBatch(
      this.dataSource,
      'session_lineage',
      't.session_id = ANY($1::uuid[]) AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.workdir_id = t.session_id)',
      [sessionIds],
      limit,
    );
    if (removed.rows > 0) {
      await this.dataSource.query(
        prepared(`UPDATE sessions s SET purge_held_at = NULL WHERE s.id = ANY($1::uuid[]) AND s.purge_held_at > lifecycle_now()
           AND NOT EXISTS (SELECT 1 FROM session_lineage l WHERE l.ancestor_id = s.id)`),
        [ancestors.map((row) => row.id)],
      );
    }
    return removed;
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

  /**
   * Marks these sessions, where they still exist, as held: looked at again after the fresh ones,
   * once `afterS` (0: the next batch with room; a failed purge: later) has passed by the lifecycle clock.
   */
  async hold(sessionIds: string[], afterS = 0): Promise<void> {
    if (sessionIds.length === 0) return;
    await this.dataSource.query(
      prepared(`UPDATE sessions SET purge_held_at = LEAST(now(), lifecycle_now()) + make_interval(secs => $2::int) WHERE id = ANY($1::uuid[]) AND deleted_at IS NOT NULL`),
      [sessionIds, afterS],
    );
  }
}
