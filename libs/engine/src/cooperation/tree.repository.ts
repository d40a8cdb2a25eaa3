import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { AgentSnapshot } from '#libs/agents';
import { prepared } from '#libs/database';
import { LEDGER_TOTALS_COLUMNS, totalsFromRow, type UsageTotals } from '#libs/usage';
import { SESSION_COLUMNS, type SessionEntity, sessionFromRow, type SubagentInfo } from '../tables/session.entity.js';
import { COOPERATION_SIGNAL_MACHINE } from '../machines/session-states.js';

/** The signal of a member that settled with no turn ending (COOPERATION_SIGNAL_MACHINE). */
const SETTLED_SIGNAL = COOPERATION_SIGNAL_MACHINE.edges.settled.to[0];

/** A member session to create, under its coordinator's lock; its id is derived from the spawning call. */
export interface NewMember {
  id: string;
  parent: SessionEntity;
  agentId: string;
  model: string;
  toolApprovalMode: string;
  instructions: string;
  agentSnapshot: AgentSnapshot;
  subagent: SubagentInfo;
  spawnedBy: { turnId: string; callId: string };
  at: Date;
}

/** A member as a coordinator's wait sees it (read under the coordinator's lock; the member's own state is read committed). */
export interface MemberState {
  id: string;
  name: string;
  agentId: string;
  depth: number;
  parentSessionId: string | null;
  pendingInputCount: number;
  queuePaused: boolean;
  /** The member's active turn, if any. */
  activeTurnId: string | null;
  activeStatus: string | null;
  waitpointKind: string | null;
  /** The member's latest turn (its result once it settled). */
  lastTurnId: string | null;
  lastStatus: string | null;
  errorCode: string | null;
  /** The final answer of its latest turn, when that completed with one. */
  answer: string | null;
}

/** A member's turn that ended, delivered to its parent's stream (`yuxi.session.subagent.state`). */
export interface MemberSignal {
  memberSessionId: string;
  name: string;
  turnId: string;
  status: string;
  errorCode: string | null;
}

/** A member that would claim if its tree had a slot: no active turn, and no pending input still preparing its attachments. */
const CLAIMABLE_MEMBER = `NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = m.id AND t.status IN ('queued', 'in_progress', 'requires_action'))
  AND NOT EXISTS (SELECT 1 FROM inputs h WHERE h.session_id = m.id AND h.status = 'pending' AND h.attachment_status <> 'ready')`;

const MEMBER_STATE_COLUMNS = `s.id, s.subagent->>'name' AS name, s.agent_id, s.depth, s.parent_session_id, s.pending_input_count, s.queue_paused,
  a.id AS active_turn_id, a.status AS active_status, a.waitpoint->>'kind' AS waitpoint_kind,
  l.id AS last_turn_id, l.status AS last_status, l.error->>'code' AS error_code,
  (SELECT string_agg(p->>'text', '') FROM items i CROSS JOIN LATERAL jsonb_array_elements(i.content) p
    WHERE i.turn_id = l.id AND i.role = 'assistant' AND i.phase = 'final_answer' AND l.status = 'completed' AND p->>'type' = 'output_text') AS answer`;
const MEMBER_STATE_JOINS = `LEFT JOIN LATERAL (SELECT id, status, waitpoint FROM turns WHERE session_id = s.id AND status IN ('queued', 'in_progress', 'requires_action') LIMIT 1) a ON true
  LEFT JOIN LATERAL (SELECT id, status, error FROM turns WHERE session_id = s.id ORDER BY seq DESC LIMIT 1) l ON true`;

/**
 * The cooperation tree over the sessions table: members (sessions linked to a parent and a root),
 * what a coordinator's wait reads of them, the signals a member's ended turn leaves for its
 * parent, and the tree-wide reads and locks of stop and continue. Lock order: parent before child,
 * a level at a time; nothing here locks upward.
 */
@Injectable()
export class TreeRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Inserts a member with its first input counted (call under the parent's lock). Its id is derived
   * from the spawning call: a second insert of the same call (a retry, a takeover) inserts nothing
   * and returns the member that exists (`created` false).
   */
  async createMember(manager: EntityManager, member: NewMember): Promise<{ session: SessionEntity; created: boolean }> {
    const { parent } = member;
    const rows = (await manager.query(
      prepared(`INSERT INTO sessions (id, owner_id, agent_id, model, tool_approval_mode, instructions, agent_snapshot, trusted_tools, title, project_id, workdir_id, environment,
         is_pinned, archived, unread, queue_paused, input_seq, item_seq, turn_seq, pending_input_count, current_turn,
         parent_session_id, root_session_id, depth, spawned_turn_id, spawned_call_id, subagent, created_at, last_active_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, '{}', $8, $9, $17, $18::jsonb, false, false, false, false, 1, 0, 0, 1, NULL,
         $10, $11, $12, $13, $14, $15::jsonb, $16, $16, $16)
       ON CONFLICT DO NOTHING
       RETURNING ${SESSION_COLUMNS}`),
      [
        member.id,
        parent.ownerId,
        member.agentId,
        member.model,
        member.toolApprovalMode,
        member.instructions,
        JSON.stringify(member.agentSnapshot),
        member.subagent.name,
        parent.projectId,
        parent.id,
        parent.rootSessionId,
        parent.depth + 1,
        member.spawnedBy.turnId,
        member.spawnedBy.callId,
        JSON.stringify(member.subagent),
        member.at,
        // A tree shares its root's workdir (its project's, when it has one).
        parent.workdirId,
        // And its environment (its root's: every member carries what its parent carries).
        parent.environment === null ? null : JSON.stringify(parent.environment),
      ],
    )) as Record<string, unknown>[];
    if (rows[0]) return { session: sessionFromRow(rows[0]), created: true };
    const existing = (await manager.query(prepared(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1`), [member.id])) as Record<string, unknown>[];
    if (!existing[0]) throw new Error(`member ${member.id} conflicts with a session of another call`);
    return { session: sessionFromRow(existing[0]), created: false };
  }

  /**
   * How many members the tree holds (its root not counted, deleted ones counted: they were made)
   * and how many of them one coordinator turn created. Creates in one tree are serialised first (a
   * transaction-scoped advisory lock on the root): coordinators at different depths hold different
   * row locks, and the tree's cap must hold across them. Call before creating a member.
   */
  async lockedMemberCounts(manager: EntityManager, rootId: string, turnId: string): Promise<{ members: number; byTurn: number }> {
    await manager.query(prepared(`SELECT pg_advisory_xact_lock(hashtextextended('yuxi:tree-members:' || $1::text, 0))`), [rootId]);
    const rows = (await manager.query(
      prepared(`SELECT count(*)::int AS members, (count(*) FILTER (WHERE spawned_turn_id = $2))::int AS by_turn FROM sessions WHERE root_session_id = $1 AND depth > 0`),
      [rootId, turnId],
    )) as { members: number; by_turn: number }[];
    return { members: rows[0]?.members ?? 0, byTurn: rows[0]?.by_turn ?? 0 };
  }

  /** The members a coordinator spawned, oldest first, with what a wait needs of each. */
  async children(manager: EntityManager, parentId: string): Promise<MemberState[]> {
    const rows = (await manager.query(
      prepared(`SELECT ${MEMBER_STATE_COLUMNS} FROM sessions s ${MEMBER_STATE_JOINS} WHERE s.parent_session_id = $1 ORDER BY s.created_at, s.id`),
      [parentId],
    )) as Record<string, unknown>[];
    return rows.map(memberState);
  }

  /** Every member of a tree (not the root), by depth, with its state: what `/state.agent_state.cooperation` shows. */
  async members(rootId: string): Promise<MemberState[]> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT ${MEMBER_STATE_COLUMNS} FROM sessions s ${MEMBER_STATE_JOINS} WHERE s.root_session_id = $1 AND s.depth > 0 ORDER BY s.depth, s.created_at, s.id`),
      [rootId],
    )) as Record<string, unknown>[];
    return rows.map(memberState);
  }

  /** What the whole tree used (root included): the sums of its ledger rows. */
  async treeUsage(rootId: string): Promise<UsageTotals> {
    const rows = (await this.dataSource.query(prepared(`SELECT ${LEDGER_TOTALS_COLUMNS} FROM usage_ledger WHERE root_session_id = $1`), [rootId])) as Record<string, unknown>[];
    return totalsFromRow(rows[0]);
  }

  /**
   * A member's turn ended (call under the member's lock, in the transaction that ended it): its
   * signal for the parent, once per turn. A leaf insert that locks nothing of the parent. Returns
   * the parent to deliver to, or null for a root (or a signal already written).
   */
  async signalTurnEnded(manager: EntityManager, sessionId: string, turnId: string, status: string): Promise<string | null> {
    const rows = (await manager.query(
      prepared(`INSERT INTO cooperation_signals (parent_session_id, member_session_id, turn_id, status)
       SELECT parent_session_id, id, $2, $3 FROM sessions WHERE id = $1 AND parent_session_id IS NOT NULL
       ON CONFLICT (member_session_id, turn_id) WHERE turn_id IS NOT NULL DO NOTHING RETURNING parent_session_id`),
      [sessionId, turnId, status],
    )) as { parent_session_id: string }[];
    return rows[0]?.parent_session_id ?? null;
  }

  /**
   * A member settled without a turn ending (its last queued input cancelled, or its queue paused
   * with nothing running): a signal with no turn, so a coordinator waiting for it still wakes.
   */
  async signalSettled(manager: EntityManager, sessionId: string): Promise<string | null> {
    const rows = (await manager.query(
      prepared(`INSERT INTO cooperation_signals (parent_session_id, member_session_id, turn_id, status)
       SELECT parent_session_id, id, NULL, '${SETTLED_SIGNAL}' FROM sessions WHERE id = $1 AND parent_session_id IS NOT NULL RETURNING parent_session_id`),
      [sessionId],
    )) as { parent_session_id: string }[];
    return rows[0]?.parent_session_id ?? null;
  }

  /** Takes the parent's undelivered signals, oldest first (call under the parent's lock): each is delivered once; those of an ended turn are returned. */
  async takeSignals(manager: EntityManager, parentId: string): Promise<MemberSignal[]> {
    const rows = (await manager.query(
      prepared(`WITH d AS (
         UPDATE cooperation_signals SET delivered_at = now() WHERE parent_session_id = $1 AND delivered_at IS NULL
         RETURNING id, member_session_id, turn_id, status
       )
       SELECT d.member_session_id, s.subagent->>'name' AS name, d.turn_id, d.status, t.error->>'code' AS error_code
       FROM d JOIN sessions s ON s.id = d.member_session_id LEFT JOIN turns t ON t.id = d.turn_id ORDER BY d.id`),
      [parentId],
    )) as { member_session_id: string; name: string | null; turn_id: string | null; status: string; error_code: string | null }[];
    // A signal without a turn wakes a wait but is no turn's state: nothing to announce.
    return rows.flatMap((row) => (row.turn_id ? [{ memberSessionId: row.member_session_id, name: row.name ?? '', turnId: row.turn_id, status: row.status, errorCode: row.error_code }] : []));
  }

  /** Parents with a signal undelivered for longer than `graceMs` (the after-commit delivery was lost): the sweep delivers them. */
  async parentsWithUndeliveredSignals(graceMs: number, limit: number): Promise<string[]> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT DISTINCT parent_session_id FROM cooperation_signals
       WHERE delivered_at IS NULL AND created_at < now() - make_interval(secs => $1::double precision / 1000) LIMIT $2`),
      [graceMs, limit],
    )) as { parent_session_id: string }[];
    return rows.map((row) => row.parent_session_id);
  }

  /**
   * Locks the tree's members of one depth (call holding the locks of every shallower level, so no
   * member of this level can be created meanwhile): a fresh statement per level, parent before child.
   */
  async lockLevel(manager: EntityManager, rootId: string, depth: number): Promise<SessionEntity[]> {
    const rows = (await manager.query(
      prepared(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE root_session_id = $1 AND depth = $2 ORDER BY id FOR UPDATE`),
      [rootId, depth],
    )) as Record<string, unknown>[];
    return rows.map(sessionFromRow);
  }

  /** Marks the tree stopped (now) or continued (null); call under the root's lock. */
  async setStopped(manager: EntityManager, rootId: string, stopped: boolean): Promise<void> {
    await manager.query(prepared(`UPDATE sessions SET tree_stopped_at = CASE WHEN $2 THEN coalesce(tree_stopped_at, now()) END WHERE id = $1`), [rootId, stopped]);
  }

  /**
   * The cap's gate for a member about to claim its queue head (call under the member's lock): the
   * tree's cap, how many members hold a slot (an active turn that is not a coordinator waiting for
   * its own members), and how many claimable members queued before this one. Serialised per tree by
   * an advisory lock, a leaf lock taken last, held to commit.
   */
  async admission(manager: EntityManager, member: SessionEntity): Promise<{ cap: number | null; running: number; queuedBefore: number }> {
    await manager.query(prepared(`SELECT pg_advisory_xact_lock(hashtextextended($1::text, 19))`), [member.rootSessionId]);
    const rows = (await manager.query(
      prepared(`SELECT r.tree_max_concurrent AS cap,
         (SELECT count(*) FROM sessions m JOIN turns t ON t.session_id = m.id
           WHERE m.root_session_id = $1 AND m.depth > 0 AND m.id <> $2 AND t.status IN ('queued', 'in_progress', 'requires_action')
             AND coalesce(t.waitpoint->>'kind', '') <> 'cooperation')::int AS running,
         (SELECT count(*) FROM sessions m
           WHERE m.root_session_id = $1 AND m.depth > 0 AND m.id <> $2 AND m.pending_input_count > 0 AND NOT m.queue_paused
             AND (m.created_at, m.id) < ($3, $2::uuid) AND ${CLAIMABLE_MEMBER})::int AS queued_before
       FROM sessions r WHERE r.id = $1`),
      [member.rootSessionId, member.id, member.createdAt],
    )) as { cap: number | null; running: number; queued_before: number }[];
    const row = rows[0];
    return { cap: row?.cap ?? null, running: row?.running ?? 0, queuedBefore: row?.queued_before ?? 0 };
  }

  /** Members of the tree that wait for a slot (claimable input, no active turn), oldest first: nudged when one frees. */
  async queuedMembers(rootId: string, limit: number): Promise<string[]> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT m.id FROM sessions m WHERE m.root_session_id = $1 AND m.depth > 0 AND m.pending_input_count > 0 AND NOT m.queue_paused AND ${CLAIMABLE_MEMBER}
       ORDER BY m.created_at, m.id LIMIT $2`),
      [rootId, limit],
    )) as { id: string }[];
    return rows.map((row) => row.id);
  }

  /**
   * For the recovery sweep: each tree's first queued member (the one the cap admits next; the
   * claim's gate is FIFO) that has waited longer than `graceMs`. The general sweep of waiting
   * inputs leaves members out, so a large tree queued behind its cap never crowds it.
   */
  async queuedTreeHeads(graceMs: number, limit: number): Promise<string[]> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT DISTINCT ON (m.root_session_id) m.id FROM sessions m
       WHERE m.depth > 0 AND m.pending_input_count > 0 AND NOT m.queue_paused AND m.last_active_at < now() - make_interval(secs => $1::double precision / 1000)
         AND ${CLAIMABLE_MEMBER}
       ORDER BY m.root_session_id, m.created_at, m.id LIMIT $2`),
      [graceMs, limit],
    )) as { id: string }[];
    return rows.map((row) => row.id);
  }
}

function memberState(row: Record<string, unknown>): MemberState {
  return {
    id: row.id as string,
    name: (row.name as string | null) ?? '',
    agentId: row.agent_id as string,
    depth: Number(row.depth),
    parentSessionId: (row.parent_session_id as string | null) ?? null,
    pendingInputCount: Number(row.pending_input_count),
    queuePaused: row.queue_paused as boolean,
    activeTurnId: (row.active_turn_id as string | null) ?? null,
    activeStatus: (row.active_status as string | null) ?? null,
    waitpointKind: (row.waitpoint_kind as string | null) ?? null,
    lastTurnId: (row.last_turn_id as string | null) ?? null,
    lastStatus: (row.last_status as string | null) ?? null,
    errorCode: (row.error_code as string | null) ?? null,
    answer: (row.answer as string | null) ?? null,
  };
}
