import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import { DomainError } from '#libs/errors';
import { SESSION_COLUMNS, type SessionEntity, sessionFromRow } from '../tables/session.entity.js';
import type { ForkFields, ForkPoint, LineageSegment } from './lineage.types.js';

/**
 * The fork's session row is copied from the source's row in SQL (its configuration: agent, model,
 * approvals mode, compaction mode, instructions, agent snapshot, project, environment, tree cap),
 * a root of a new tree whose counters start at the point, so its own items and turns sort after
 * the inherited ones; its session TTL too (the same agent and project: the same bounds), with the
 * TTL sweep's first look (ttl_check_at) at its shortest TTL from now. Not copied: trusted tools
 * (approvals are asked again), budgets, queue, unread, pinned, archived (the columns' defaults). The lineage rows ride in the same statement
 * and are written only when the session row is (a source deleted meanwhile writes nothing).
 */
const INSERT_FORK_SQL = `WITH f AS (
    INSERT INTO sessions (id, owner_id, agent_id, model, tool_approval_mode, compaction_mode, instructions, agent_snapshot, title, project_id,
      workdir_id, environment, item_seq, turn_seq, root_session_id, depth, tree_max_concurrent,
      forked_from_session_id, forked_from_turn_id, fork_position, fork_item_seq, fork_turn_seq, metadata, created_at, last_active_at, updated_at,
      ttl_archive_after_s, ttl_delete_after_s, ttl_check_at)
    SELECT $2::uuid, src.owner_id, src.agent_id, src.model, src.tool_approval_mode, src.compaction_mode, src.instructions, src.agent_snapshot, $3, src.project_id,
      $4::uuid, src.environment, $5::bigint, $6::int, $2::uuid, 0, src.tree_max_concurrent,
      src.id, $7::uuid, $8, $5::bigint, $6::int, $9::jsonb, now(), now(), now(),
      src.ttl_archive_after_s, src.ttl_delete_after_s,
      LEAST(now() + make_interval(secs => src.ttl_delete_after_s), now() + make_interval(secs => src.ttl_archive_after_s))
    FROM sessions src WHERE src.id = $1::uuid AND src.deleted_at IS NULL
    RETURNING ${SESSION_COLUMNS}),
  l AS (
    INSERT INTO session_lineage (session_id, depth, ancestor_id, upto_item_seq, upto_turn_seq)
    SELECT f.id, u.depth, u.ancestor_id, u.upto_item_seq, u.upto_turn_seq
    FROM f, unnest($10::smallint[], $11::uuid[], $12::bigint[], $13::int[]) AS u(depth, ancestor_id, upto_item_seq, upto_turn_seq))
  SELECT ${SESSION_COLUMNS} FROM f`;

@Injectable()
export class ForkWrites {
  /** One statement: the fork's session row (the source's configuration copied, counters at the point) and its lineage rows. */
  async insertFork(manager: EntityManager, source: SessionEntity, point: ForkPoint, lineage: LineageSegment[], fields: ForkFields): Promise<SessionEntity> {
    const [row] = (await manager.query(prepared(INSERT_FORK_SQL), [
      source.id,
      fields.id,
      fields.title,
      fields.workdirId,
      point.itemSeq,
      point.turnSeq,
      point.turnId,
      point.position,
      JSON.stringify(fields.metadata),
      lineage.map((segment) => segment.depth),
      lineage.map((segment) => segment.sessionId),
      lineage.map((segment) => segment.uptoItemSeq),
      lineage.map((segment) => segment.uptoTurnSeq),
    ])) as Record<string, unknown>[];
    if (!row) throw DomainError.notFound(`Session ${source.id}`);
    return sessionFromRow(row);
  }
}
