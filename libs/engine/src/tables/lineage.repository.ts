import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, prepared } from '#libs/database';
import type { LineageSegment } from '../forks/lineage.types.js';

/**
 * Prefix of the advisory lock key of "a session's history may be referenced": a fork holds it
 * shared on the sessions it references until it commits, a delete exclusively on those whose files
 * it may release, so neither misses the other's rows.
 */
export const LINEAGE_LOCK = 'yuxi:lineage:';

/** The `session_lineage` table: a fork's ancestors and the bounds of what it inherits from each. */
@Injectable()
export class LineageRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The session's ancestors, nearest first; [] for a session that is not a fork (one probe of the primary key). */
  async segments(sessionId: string, manager?: EntityManager): Promise<LineageSegment[]> {
    if (!isUuid(sessionId)) return [];
    const rows = (await (manager ?? this.dataSource.manager).query(
      prepared(`SELECT depth, ancestor_id, upto_item_seq, upto_turn_seq FROM session_lineage WHERE session_id = $1 ORDER BY depth`),
      [sessionId],
    )) as { depth: number; ancestor_id: string; upto_item_seq: string; upto_turn_seq: number }[];
    return rows.map((row) => ({ depth: Number(row.depth), sessionId: row.ancestor_id, uptoItemSeq: String(row.upto_item_seq), uptoTurnSeq: Number(row.upto_turn_seq) }));
  }

  /**
   * Whether the ancestor's history up to a fork's bound refers to the file, by index probes only
   * (never a scan of the history): an inline image or an attachment by its input, consumed by a
   * turn within the bound; an attachment by its message, an item within the bound; a tool's image
   * (which names neither) by when it was bound, no later than the end of the bound's last turn (the
   * database's clock against the worker's that ended the turn: a model call lies between a tool's
   * image and its turn's end, well beyond any skew). A file sent to the ancestor after the fork: false.
   */
  async referencedWithin(
    segment: { sessionId: string; uptoItemSeq: string; uptoTurnSeq: number },
    file: { inputId: string | null; messageId: string | null; boundAt: Date | null },
  ): Promise<boolean> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT 1 WHERE
           ($3::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM inputs i JOIN turns t ON t.id = i.turn_id WHERE i.id = $3::uuid AND t.session_id = $1 AND t.seq <= $5::int))
        OR ($4::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM items WHERE id = $4::uuid AND session_id = $1 AND seq <= $2::bigint))
        OR ($3::uuid IS NULL AND $4::uuid IS NULL AND $6::timestamptz <= (SELECT completed_at FROM turns WHERE session_id = $1 AND seq = $5::int))`),
      [segment.sessionId, segment.uptoItemSeq, file.inputId, file.messageId, segment.uptoTurnSeq, file.boundAt],
    )) as unknown[];
    return rows.length > 0;
  }

  /**
   * Of these deleted sessions and their deleted ancestors, those no live session inherits from:
   * their files (attachments, inline images) may go. A fork's history stays readable after its
   * source is deleted, so the source's files stay until the last live fork that references it is
   * deleted too (its rows stay as long as any fork, deleted or not, names it: the purge of
   * deleted sessions takes a source only after its last fork). Call after the sessions are
   * marked deleted, in the same transaction (READ COMMITTED).
   */
  async releasable(manager: EntityManager, deletedIds: string[]): Promise<string[]> {
    if (deletedIds.length === 0) return [];
    // First lock the deleted sessions and ALL their ancestors, deleted or not yet (exclusively, in
    // id order, as forks take them shared): an ancestor whose own delete is uncommitted now would
    // otherwise be missed by both deletes (that one still sees this fork live, this one does not
    // see it deleted). Whoever locks second waits for the other's commit.
    const locked = (await manager.query(
      prepared(`SELECT x.id, pg_advisory_xact_lock(hashtextextended('${LINEAGE_LOCK}' || x.id::text, 0)) FROM (
         SELECT unnest($1::uuid[]) AS id
         UNION
         SELECT l.ancestor_id FROM session_lineage l WHERE l.session_id = ANY($1::uuid[])
         ORDER BY id) x`),
      [deletedIds],
    )) as { id: string }[];
    // Then, in a new statement (a snapshot taken after the locks, so deletes and forks that held
    // them are seen committed): the deleted ones of them no live session (a fork, at any depth)
    // names in its lineage.
    const rows = (await manager.query(
      prepared(`SELECT c.id FROM sessions c WHERE c.id = ANY($1::uuid[]) AND c.deleted_at IS NOT NULL AND NOT EXISTS (
         SELECT 1 FROM session_lineage l JOIN sessions s ON s.id = l.session_id AND s.deleted_at IS NULL WHERE l.ancestor_id = c.id)`),
      [locked.map((row) => row.id)],
    )) as { id: string }[];
    return rows.map((row) => row.id);
  }
}
