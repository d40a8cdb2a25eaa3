import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
// TypeORM's deep-partial type cannot express JSON with `unknown` values (the agent snapshot's tool schemas).
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import { isUuid, newId, type Page, type PageQuery, prepared, sqlList, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { LEDGER_TOTALS_COLUMNS, totalsFromRow, type UsageTotals } from '#libs/usage';
import { ACCOUNT_OF, ACCOUNT_RUNNING_TURNS } from '../claims/account-sql.js';
import { SESSION_COLUMNS, SessionEntity, sessionFromRow, type TurnSummary } from './session.entity.js';
import { ttlFirstCheck, ttlNextCheckSql } from './session-ttl-check.js';
import type { NewSession, SessionPatch } from './session-writes.types.js';

export type { NewSession, SessionPatch } from './session-writes.types.js';

/** The active turn statuses a bulk cancel may select (a queued turn is never written). */
const CANCELLABLE_TURN_STATUSES: readonly string[] = ['in_progress', 'requires_action'];

/** Which sessions an operator's bulk cancel selects (every field narrows). */
export interface CancellableFilter {
  /** Active turn statuses to match (in_progress, requires_action). */
  turnStatuses: string[];
  agentId?: string;
  ownerId?: string;
  createdBefore?: Date;
  createdAfter?: Date;
}

export interface SessionFilter {
  agentId?: string;
  /** A tree (root and members); absent: roots only. */
  rootSessionId?: string;
  archived?: boolean;
  isPinned?: boolean;
  /** Sessions whose metadata holds every one of these pairs. */
  metadata?: Record<string, string>;
  /** The direct forks of this session (sessions_forks_idx). */
  forkedFrom?: string;
}

/** A stale `If-Match`: 412 with the session's current revision, so the caller can re-read and retry. */
function revisionMismatch(sessionId: string, expected: number, current: number): DomainError {
  return new DomainError('revision_mismatch', `Session ${sessionId} is at revision ${current}, not ${expected}; read it again and retry`, {
    expected_revision: expected,
    revision: current,
  });
}

/**
 * The session row: ownership, configuration snapshot, presentation flags, the per-session
 * counters and the overview of its current turn (a read model; gates read the turns table). Its
 * row lock is the session lock every state change of the session takes first.
 */
@Injectable()
export class SessionsRepository {
  constructor(@InjectRepository(SessionEntity) private readonly sessions: Repository<SessionEntity>) {}

  /** Inserts the session; with a first input its queue already counts that input (seq 1). */
  async create(manager: EntityManager, input: NewSession, withFirstInput: boolean): Promise<SessionEntity> {
    const now = new Date();
    const id = newId();
    const { ttl, ...fields } = input;
    const row = manager.create(SessionEntity, {
      ...fields,
      id,
      parentSessionId: null,
      rootSessionId: id,
      depth: 0,
      spawnedTurnId: null,
      spawnedCallId: null,
      subagent: null,
      treeMaxConcurrent: input.treeMaxConcurrent ?? null,
      treeStoppedAt: null,
      // Not a fork (a fork is written by ForkWrites); null, not absent, so the view shows `forked_from: null`.
      forkedFromSessionId: null,
      forkedFromTurnId: null,
      forkPosition: null,
      forkItemSeq: null,
      forkTurnSeq: null,
      workdirId: input.workdirId ?? id,
      environment: input.environment ?? null,
      metadata: input.metadata ?? {},
      ttlArchiveAfterS: ttl?.archiveAfterS ?? null,
      ttlDeleteAfterS: ttl?.deleteAfterS ?? null,
      ttlCheckAt: ttlFirstCheck(now, ttl),
      revision: 1,
      deletedAt: null,
      trustedTools: [],
      isPinned: false,
      archived: false,
      unread: false,
      queuePaused: false,
      inputSeq: withFirstInput ? '1' : '0',
      itemSeq: '0',
      turnSeq: 0,
      pendingInputCount: withFirstInput ? 1 : 0,
      currentTurn: null,
      createdAt: now,
      lastActiveAt: now,
      updatedAt: now,
    });
    await manager.insert(SessionEntity, row as QueryDeepPartialEntity<SessionEntity>);
    return row;
  }

  /** Another owner's session, and a deleted one, are indistinguishable from a missing one. */
  async getVisible(ownerId: string, sessionId: string, withUsage = false, manager?: EntityManager): Promise<SessionEntity & { usage?: UsageTotals }> {
    // With `withUsage`, what the session used too: the sums of its ledger rows, in the same statement.
    const usage = withUsage ? `, (SELECT to_jsonb(u) FROM (SELECT ${LEDGER_TOTALS_COLUMNS} FROM usage_ledger WHERE session_id = $1) u) AS usage_totals` : '';
    const sql = prepared(`SELECT ${SESSION_COLUMNS}${usage} FROM sessions WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL`);
    // `manager` given: read on its transaction's connection (no lock), not a second one from the pool.
    const rows = isUuid(sessionId) ? ((await (manager ?? this.sessions).query(sql, [sessionId, ownerId])) as Record<string, unknown>[]) : [];
    if (!rows[0]) throw DomainError.notFound(`Session ${sessionId}`);
    return withUsage ? { ...sessionFromRow(rows[0]), usage: totalsFromRow(rows[0].usage_totals as Record<string, unknown>) } : sessionFromRow(rows[0]);
  }

  /**
   * lock() for a caller's request: another owner's session and a deleted one are not found. The
   * worker's paths use lock() itself (a deleted session has no work left: deletion waits for it).
   */
  async lockVisible(manager: EntityManager, ownerId: string, sessionId: string): Promise<SessionEntity> {
    const session = await this.lock(manager, sessionId);
    if (!session || session.ownerId !== ownerId || session.deletedAt !== null) throw DomainError.notFound(`Session ${sessionId}`);
    return session;
  }

  /** SELECT … FOR UPDATE: serialises inputs, claims and settlements of one session. */
  async lock(manager: EntityManager, sessionId: string): Promise<SessionEntity | null> {
    if (!isUuid(sessionId)) return null;
    const rows = (await manager.query(prepared(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1 FOR UPDATE`), [sessionId])) as Record<string, unknown>[];
    return rows[0] ? sessionFromRow(rows[0]) : null;
  }

  /**
   * Records a received input in one statement that also takes the session lock: the next input
   * sequence number, one more pending input, and last_active_at.
   */
  async acceptInput(manager: EntityManager, sessionId: string, ownerId: string, at: Date): Promise<{ session: SessionEntity; receivedSeq: number }> {
    // An id that is not a UUID names no session (and must not reach Postgres as one).
    if (!isUuid(sessionId)) throw DomainError.notFound(`Session ${sessionId}`);
    const [rows] = (await manager.query(
      prepared(`UPDATE sessions SET input_seq = input_seq + 1, pending_input_count = pending_input_count + 1,
              last_active_at = GREATEST(last_active_at, $3)
       WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL RETURNING ${SESSION_COLUMNS}`),
      [sessionId, ownerId, at],
    )) as [Record<string, unknown>[], number];
    if (!rows[0]) throw DomainError.notFound(`Session ${sessionId}`);
    const session = sessionFromRow(rows[0]);
    return { session, receivedSeq: Number(session.inputSeq) };
  }

  /**
   * A turn stopped running (it ended, or a coordinator waits for its members; call after its status
   * was written): as `recordTurnUpdated`, and with `accountCap` > 0 the same statement says whether
   * the session's account was at its cap of running turns (the others still running fill the cap
   * less this one): `crowdedAccount` then names it, and its waiting sessions are nudged. With a cap
   * of 0 nothing more is evaluated.
   */
  async recordTurnFreed(
    manager: EntityManager,
    sessionId: string,
    turn: TurnSummary,
    itemCount: number,
    at: Date,
    accountCap: number,
  ): Promise<{ firstItemSeq: number; crowdedAccount: string | null }> {
    const [rows] = (await manager.query(
      prepared(`UPDATE sessions SET item_seq = item_seq + $2, current_turn = $3, unread = true, last_active_at = GREATEST(last_active_at, $4)
       WHERE id = $1
       RETURNING item_seq, CASE WHEN $5::int > 0 AND (${ACCOUNT_RUNNING_TURNS(`(${ACCOUNT_OF('sessions.owner_id')})`)}) >= $5::int - 1
         THEN (${ACCOUNT_OF('sessions.owner_id')}) END AS crowded_account`),
      [sessionId, itemCount, JSON.stringify(turn), at, accountCap],
    )) as [{ item_seq: string; crowded_account: string | null }[], number];
    const row = rows[0];
    return { firstItemSeq: Number(row?.item_seq ?? 0) - itemCount + 1, crowdedAccount: row?.crowded_account ?? null };
  }

  /**
   * The next run of an active turn started (call under the session lock): its consumed inputs
   * leave the queue and `itemCount` item sequence numbers are reserved; returns the first.
   */
  async recordRunStarted(manager: EntityManager, sessionId: string, turn: TurnSummary, consumedInputs: number, itemCount: number, at: Date): Promise<number> {
    const [rows] = (await manager.query(
      prepared(`UPDATE sessions SET item_seq = item_seq + $2, pending_input_count = pending_input_count - $3, current_turn = $4,
              last_active_at = GREATEST(last_active_at, $5)
       WHERE id = $1 RETURNING item_seq`),
      [sessionId, itemCount, consumedInputs, JSON.stringify(turn), at],
    )) as [{ item_seq: string }[], number];
    return Number(rows[0]?.item_seq ?? 0) - itemCount + 1;
  }

  /** A turn changed state (call under the session lock); reserves `itemCount` item sequence numbers and marks the session unread. */
  async recordTurnUpdated(manager: EntityManager, sessionId: string, turn: TurnSummary, itemCount: number, at: Date): Promise<number> {
    const [rows] = (await manager.query(
      prepared(`UPDATE sessions SET item_seq = item_seq + $2, current_turn = $3, unread = true, last_active_at = GREATEST(last_active_at, $4)
       WHERE id = $1 RETURNING item_seq`),
      [sessionId, itemCount, JSON.stringify(turn), at],
    )) as [{ item_seq: string }[], number];
    return Number(rows[0]?.item_seq ?? 0) - itemCount + 1;
  }

  /**
   * Applies a patch and bumps the revision. Presentation fields never move last_active_at or list
   * order; model and approval mode only affect inputs received afterwards (each input freezes its
   * own config). `ifMatch` (the caller's `If-Match`) is compared in the UPDATE itself, so two
   * writers holding the same revision cannot both succeed; only a refused update reads the row
   * again, to tell 412 (the revision moved) from 404. An empty patch changes nothing and keeps
   * the revision (but still answers 412 to a stale `If-Match`).
   */
  async update(ownerId: string, sessionId: string, patch: SessionPatch, ifMatch?: number, db: EntityManager = this.sessions.manager): Promise<SessionEntity> {
    const sets: string[] = [];
    const values: unknown[] = [sessionId, ownerId];
    const set = (column: string, value: unknown): void => {
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    };
    if (patch.title !== undefined) set('title', patch.title);
    if (patch.isPinned !== undefined) set('is_pinned', patch.isPinned);
    if (patch.unread !== undefined) set('unread', patch.unread);
    if (patch.model !== undefined) set('model', patch.model);
    if (patch.toolApprovalMode !== undefined) set('tool_approval_mode', patch.toolApprovalMode);
    if (patch.compactionMode !== undefined) set('compaction_mode', patch.compactionMode);
    if (patch.metadata !== undefined) set('metadata', JSON.stringify(patch.metadata));
    if (patch.ttl !== undefined) {
      set('ttl_archive_after_s', patch.ttl.archiveAfterS);
      set('ttl_delete_after_s', patch.ttl.deleteAfterS);
      // The sweep's next look, from the new values (SET sees the old row): sooner when the TTL was shortened.
      sets.push(`ttl_check_at = ${ttlNextCheckSql(`$${values.length - 1}::int`, `$${values.length}::int`)}`);
    }
    if (sets.length === 0 && patch.touched !== true) {
      const current = await this.getVisible(ownerId, sessionId);
      if (ifMatch !== undefined && current.revision !== ifMatch) throw revisionMismatch(sessionId, ifMatch, current.revision);
      return current;
    }
    if (!isUuid(sessionId)) throw DomainError.notFound(`Session ${sessionId}`);
    values.push(ifMatch ?? null);
    const [rows] = (await db.query(
      prepared(`UPDATE sessions SET ${[...sets, 'revision = revision + 1', 'updated_at = now()'].join(', ')}
       WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL AND ($${values.length}::int IS NULL OR revision = $${values.length}::int) RETURNING ${SESSION_COLUMNS}`),
      values,
    )) as [Record<string, unknown>[], number];
    if (!rows[0]) {
      const current = await this.getVisible(ownerId, sessionId);
      throw revisionMismatch(sessionId, ifMatch ?? current.revision, current.revision);
    }
    return sessionFromRow(rows[0]);
  }

  /** Marks the session archived and bumps its revision (call under the session lock, after the use case checked its gates). */
  async markArchived(manager: EntityManager, sessionId: string): Promise<number> {
    const [rows] = (await manager.query(prepared(`UPDATE sessions SET archived = true, revision = revision + 1, updated_at = now() WHERE id = $1 RETURNING revision`), [
      sessionId,
    ])) as [{ revision: number }[], number];
    return Number(rows[0]?.revision ?? 0);
  }

  /**
   * Locks every session of the tree rooted at `rootId` (root first, then level by level, the tree
   * lock order) and returns them: what a delete checks before it marks them deleted.
   */
  async lockTree(manager: EntityManager, rootId: string): Promise<SessionEntity[]> {
    const rows = (await manager.query(prepared(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE root_session_id = $1 ORDER BY depth, id FOR UPDATE`), [rootId])) as Record<
      string,
      unknown
    >[];
    return rows.map(sessionFromRow);
  }

  /**
   * Soft-deletes the live sessions of a tree (call under the tree's locks); returns their ids.
   * `deleted_at` is stamped by the lifecycle clock, which the purge's grace (SESSION_PURGE_AFTER_S)
   * is measured on: both ends of the grace on one clock (the same as now() unless an administrator
   * moved it, in tests).
   */
  async markTreeDeleted(manager: EntityManager, rootId: string): Promise<string[]> {
    const [rows] = (await manager.query(
      prepared(`UPDATE sessions SET deleted_at = lifecycle_now(), ttl_check_at = NULL, revision = revision + 1, updated_at = now() WHERE root_session_id = $1 AND deleted_at IS NULL RETURNING id`),
      [rootId],
    )) as [{ id: string }[], number];
    return rows.map((row) => row.id);
  }

  /** Reserves `count` item sequence numbers (call under the session lock); returns the first. */
  async reserveItemSeqs(manager: EntityManager, sessionId: string, count: number): Promise<number> {
    const [rows] = (await manager.query(prepared(`UPDATE sessions SET item_seq = item_seq + $2 WHERE id = $1 RETURNING item_seq`), [sessionId, count])) as [
      { item_seq: string }[],
      number,
    ];
    return Number(rows[0]?.item_seq ?? 0) - count + 1;
  }

  /** Trusts tools for the rest of the session (`approve_session`; call under the session lock). */
  async trustTools(manager: EntityManager, sessionId: string, names: string[]): Promise<void> {
    await manager.query(
      prepared(`UPDATE sessions SET trusted_tools = ARRAY(SELECT DISTINCT unnest(trusted_tools || $2::text[]) ORDER BY 1) WHERE id = $1`),
      [sessionId, names],
    );
  }

  /** Pauses or resumes claiming (call under the session lock). */
  async setQueuePaused(manager: EntityManager, sessionId: string, paused: boolean): Promise<void> {
    await manager.query(prepared(`UPDATE sessions SET queue_paused = $2 WHERE id = $1`), [sessionId, paused]);
  }

  /** A pending input left the queue without running (call under the session lock). */
  async recordInputCancelled(manager: EntityManager, sessionId: string, at: Date): Promise<void> {
    await manager.query(
      prepared(`UPDATE sessions SET pending_input_count = pending_input_count - 1, last_active_at = GREATEST(last_active_at, $2) WHERE id = $1`),
      [sessionId, at],
    );
  }

  async list(ownerId: string, filter: SessionFilter, page: PageQuery): Promise<Page<SessionEntity>> {
    const qb = this.sessions.createQueryBuilder('s').where('s.owner_id = :ownerId AND s.deleted_at IS NULL', { ownerId });
    if (filter.agentId !== undefined) qb.andWhere('s.agent_id = :agentId', { agentId: filter.agentId });
    if (filter.rootSessionId !== undefined) qb.andWhere('s.root_session_id = :root', { root: filter.rootSessionId });
    else qb.andWhere('s.depth = 0');
    if (filter.archived !== undefined) qb.andWhere('s.archived = :archived', { archived: filter.archived });
    if (filter.isPinned !== undefined) qb.andWhere('s.is_pinned = :isPinned', { isPinned: filter.isPinned });
    if (filter.forkedFrom !== undefined) qb.andWhere('s.forked_from_session_id = :forkedFrom', { forkedFrom: filter.forkedFrom });
    // Containment, so the jsonb_path_ops GIN index answers it.
    if (filter.metadata !== undefined && Object.keys(filter.metadata).length > 0) qb.andWhere('s.metadata @> CAST(:metadata AS jsonb)', { metadata: JSON.stringify(filter.metadata) });
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? await this.sessions.findOneBy({ id: page.after, ownerId }) : null;
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a session of this caller');
      const op = page.order === 'desc' ? '<' : '>';
      qb.andWhere(`(s.created_at, s.id) ${op} (:anchorAt, :anchorId)`, { anchorAt: anchor.createdAt, anchorId: anchor.id });
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = await qb
      .orderBy('s.created_at', direction)
      .addOrderBy('s.id', direction)
      .limit(page.limit + 1)
      .getMany();
    return toPage(rows, page.limit);
  }

  /** The session row as an operator sees it (the ops CLI), with the database clock; null when there is none. */
  async operatorView(sessionId: string): Promise<Record<string, unknown> | null> {
    if (!isUuid(sessionId)) return null;
    const [row] = (await this.sessions.query(
      prepared(`SELECT id, owner_id, agent_id, model, archived, queue_paused, pending_input_count, turn_seq, current_turn, created_at, last_active_at, now() AS db_now
       FROM sessions WHERE id = $1`),
      [sessionId],
    )) as Record<string, unknown>[];
    return row ?? null;
  }

  /** Any owner's session, not deleted (the operator API; an owner's routes use getVisible). */
  async getAnyOwner(sessionId: string): Promise<SessionEntity> {
    const rows = isUuid(sessionId)
      ? ((await this.sessions.query(prepared(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1 AND deleted_at IS NULL`), [sessionId])) as Record<string, unknown>[])
      : [];
    if (!rows[0]) throw DomainError.notFound(`Session ${sessionId}`);
    return sessionFromRow(rows[0]);
  }

  /** The members a session spawned (cooperation), oldest first, at most `limit` (sessions_children_idx). */
  async membersOf(sessionId: string, limit: number): Promise<SessionEntity[]> {
    const rows = (await this.sessions.query(
      prepared(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE parent_session_id = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT $2`),
      [sessionId, limit],
    )) as Record<string, unknown>[];
    return rows.map(sessionFromRow);
  }

  /**
   * Sessions of any owner whose active turn can be asked to cancel (the operator's bulk cancel):
   * the turn is active and not already being cancelled, so a repeated bulk cancel selects only
   * what is left. Oldest first, at most `limit`; `total` counts every match (bounded by the
   * active turns, one per session).
   */
  async cancellable(filter: CancellableFilter, limit: number): Promise<{ total: number; targets: { sessionId: string; turnId: string }[] }> {
    // Written as constants (from a fixed list, never the caller's text), so the planner proves the
    // partial index of active turns (turns_one_active_per_session) answers the query.
    const statuses = filter.turnStatuses.filter((status) => CANCELLABLE_TURN_STATUSES.includes(status));
    if (statuses.length === 0) return { total: 0, targets: [] };
    const params: unknown[] = [];
    const where = [`t.status IN (${sqlList(statuses)})`, `NOT t.cancellation_pending`, `s.deleted_at IS NULL`];
    const add = (sql: (n: number) => string, value: unknown): void => {
      params.push(value);
      where.push(sql(params.length));
    };
    if (filter.agentId !== undefined) add((n) => `s.agent_id = $${n}`, filter.agentId);
    if (filter.ownerId !== undefined) add((n) => `s.owner_id = $${n}::uuid`, filter.ownerId);
    if (filter.createdBefore !== undefined) add((n) => `s.created_at < $${n}`, filter.createdBefore);
    if (filter.createdAfter !== undefined) add((n) => `s.created_at > $${n}`, filter.createdAfter);
    params.push(limit);
    // The active turns (turns_one_active_per_session) joined to their sessions: no scan of history.
    const rows = (await this.sessions.query(
      `SELECT s.id AS session_id, t.id AS turn_id, count(*) OVER ()::int AS total FROM turns t JOIN sessions s ON s.id = t.session_id
       WHERE ${where.join(' AND ')} ORDER BY s.created_at, s.id LIMIT $${params.length}`,
      params,
    )) as { session_id: string; turn_id: string; total: number }[];
    return { total: rows[0]?.total ?? 0, targets: rows.map((row) => ({ sessionId: row.session_id, turnId: row.turn_id })) };
  }
}
