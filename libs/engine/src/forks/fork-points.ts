import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { isUuid, prepared, sqlList } from '#libs/database';
import { DomainError } from '#libs/errors';
import { TERMINAL_TURN_STATUSES } from '../machines/turn-states.js';
import { LINEAGE_LOCK } from '../tables/lineage.repository.js';
import type { SessionEntity } from '../tables/session.entity.js';
import type { BasedSegment, ForkAsk, ForkPoint, ForkPosition } from './lineage.types.js';

const TERMINAL = sqlList(TERMINAL_TURN_STATUSES);

/**
 * One statement (parameters: $1 the source, $2 the asked turn or null, $3 1 for "before" else 0):
 * - `seg`: the turns the source shows: its own (unbounded), then each ancestor's up to its bound;
 * - `t`: the asked turn among them, or (none asked) the latest terminal one, nearest segment first;
 * - the item bound: the last item of the owner's latest turn at or before the point that has
 *   items (turns of the owner backwards on UNIQUE (session_id, seq), each probing items_turn_idx:
 *   one turn read unless item-less turns come just before), else the owner's own base;
 * - the source's lineage with each ancestor's item and turn bases, as JSON (bigints as text);
 * - `held`: a shared lock on the lineage of every session the fork may reference (in id order),
 *   held to commit, so a delete deciding whether their files may go waits for this fork (see
 *   LineageRepository.releasable); forks never wait for each other, nor for the source's turn.
 * No row: the asked turn is not one the source shows, or nothing has finished yet.
 */
const RESOLVE_SQL = `WITH seg AS (
    SELECT 0 AS depth, $1::uuid AS sid, 2147483647 AS thi
    UNION ALL SELECT depth, ancestor_id, upto_turn_seq FROM session_lineage WHERE session_id = $1::uuid),
  t AS (
    (SELECT x.id, x.session_id, x.seq, x.status FROM turns x JOIN seg ON seg.sid = x.session_id AND x.seq <= seg.thi
      WHERE $2::uuid IS NOT NULL AND x.id = $2::uuid)
    UNION ALL
    (SELECT x.id, x.session_id, x.seq, x.status FROM seg CROSS JOIN LATERAL (
        SELECT id, session_id, seq, status FROM turns WHERE session_id = seg.sid AND seq <= seg.thi AND status IN (${TERMINAL}) ORDER BY seq DESC LIMIT 1) x
      WHERE $2::uuid IS NULL ORDER BY seg.depth LIMIT 1)),
  held AS (SELECT count(pg_advisory_xact_lock_shared(hashtextextended('${LINEAGE_LOCK}' || x.sid::text, 0))) AS n FROM (SELECT sid FROM seg ORDER BY sid) x)
  SELECT t.id AS turn_id, t.session_id AS owner_id, o.workdir_id AS owner_workdir_id, t.seq, t.status,
    coalesce((SELECT i.seq FROM turns p CROSS JOIN LATERAL (SELECT seq FROM items WHERE turn_id = p.id ORDER BY seq DESC LIMIT 1) i
       WHERE p.session_id = t.session_id AND p.seq <= t.seq - $3::int ORDER BY p.seq DESC LIMIT 1), o.fork_item_seq, 0)::text AS item_seq,
    (SELECT coalesce(json_agg(json_build_object('depth', l.depth, 'session_id', l.ancestor_id, 'upto_item_seq', l.upto_item_seq::text,
        'upto_turn_seq', l.upto_turn_seq, 'base', coalesce(a.fork_item_seq, 0)::text, 'turn_base', coalesce(a.fork_turn_seq, 0)) ORDER BY l.depth), '[]'::json)
       FROM session_lineage l JOIN sessions a ON a.id = l.ancestor_id WHERE l.session_id = $1::uuid) AS lineage
  FROM t JOIN sessions o ON o.id = t.session_id CROSS JOIN held`;

interface ResolvedRow {
  turn_id: string;
  owner_id: string;
  owner_workdir_id: string;
  seq: number;
  status: string;
  item_seq: string;
  lineage: { depth: number; session_id: string; upto_item_seq: string; upto_turn_seq: number; base: string; turn_base: number }[];
}

/** Where a fork of a session starts. Reads immutable rows only: no lock on the source, so a fork never waits for its running turn. */
@Injectable()
export class ForkPoints {
  /**
   * The fork point and the source's lineage (each ancestor with its base), in one statement.
   * DomainError not_found (a turn the source does not show) / state_conflict (not finished, nothing finished yet).
   */
  async resolve(manager: EntityManager, source: SessionEntity, ask: ForkAsk): Promise<{ point: ForkPoint; sourceLineage: BasedSegment[] }> {
    const position: ForkPosition = ask.beforeTurnId !== undefined ? 'before' : 'after';
    const turnId = ask.beforeTurnId ?? ask.afterTurnId ?? null;
    if (turnId !== null && !isUuid(turnId)) throw DomainError.notFound(`Turn ${turnId}`);
    const [row] = (await manager.query(prepared(RESOLVE_SQL), [source.id, turnId, position === 'before' ? 1 : 0])) as ResolvedRow[];
    if (!row) {
      if (turnId !== null) throw DomainError.notFound(`Turn ${turnId}`);
      throw new DomainError('state_conflict', `Session ${source.id} has no finished turn: nothing to fork yet (create a session instead)`);
    }
    if (position === 'after' && !(TERMINAL_TURN_STATUSES as readonly string[]).includes(row.status)) {
      throw new DomainError('state_conflict', `Turn ${row.turn_id} has not finished (${row.status}); fork after a finished turn, or before this one`, {
        turn_id: row.turn_id,
        turn_status: row.status,
      });
    }
    const seq = Number(row.seq);
    return {
      point: {
        turnId: row.turn_id,
        ownerSessionId: row.owner_id,
        ownerWorkdirId: row.owner_workdir_id,
        position,
        itemSeq: String(row.item_seq),
        turnSeq: position === 'before' ? seq - 1 : seq,
      },
      sourceLineage: row.lineage.map((segment) => ({
        depth: Number(segment.depth),
        sessionId: segment.session_id,
        uptoItemSeq: String(segment.upto_item_seq),
        uptoTurnSeq: Number(segment.upto_turn_seq),
        base: String(segment.base),
        turnBase: Number(segment.turn_base),
      })),
    };
  }
}
