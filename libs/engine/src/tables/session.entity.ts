import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AgentSnapshot, CompactionMode } from '#libs/agents';
import type { EnvironmentConfig } from '#libs/environments';
import type { ForkPosition } from '../forks/lineage.types.js';

/** The latest turn of the session as the session resource shows it (`yuxi.current_turn`). */
export interface TurnSummary {
  id: string;
  status: string;
  current_run_id: string | null;
  result_run_id: string | null;
  waitpoint: object | null;
}

/** What a coordinator said of a member it spawned. */
export interface SubagentInfo {
  name: string;
  task: string;
}

@Entity('sessions')
export class SessionEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'owner_id' }) ownerId!: string;
  @Column('varchar', { name: 'agent_id' }) agentId!: string;
  /** The session's configuration snapshot, frozen from the agent at creation; updates affect later inputs only. */
  @Column('varchar') model!: string;
  @Column('varchar', { name: 'tool_approval_mode' }) toolApprovalMode!: string;
  /** Overrides the agent's compaction mode for later inputs; null: the agent's. */
  @Column('varchar', { name: 'compaction_mode', nullable: true }) compactionMode!: CompactionMode | null;
  @Column('text') instructions!: string;
  /** Tools, limits and version of the agent at creation; null for sessions created before agents had them. */
  @Column('jsonb', { name: 'agent_snapshot', nullable: true }) agentSnapshot!: AgentSnapshot | null;
  /** Tools the user approved for the rest of the session (`approve_session`). */
  @Column('text', { name: 'trusted_tools', array: true }) trustedTools!: string[];
  @Column('text') title!: string;
  /** The project the session was created in (a free label on sessions from before projects existed). */
  @Column('varchar', { name: 'project_id', nullable: true }) projectId!: string | null;
  /**
   * Whose workdir the session's files go to and its file tools read: the project's id for a
   * session of a project, else the session's own id.
   */
  @Column('uuid', { name: 'workdir_id' }) workdirId!: string;
  /** The session's environment (its own param over its agent's default, normalised); null: none. Tree members carry their root's. */
  @Column('jsonb', { nullable: true }) environment!: EnvironmentConfig | null;
  @Column('boolean', { name: 'is_pinned' }) isPinned!: boolean;
  @Column('boolean') archived!: boolean;
  @Column('boolean') unread!: boolean;
  @Column('boolean', { name: 'queue_paused' }) queuePaused!: boolean;
  @Column('bigint', { name: 'input_seq' }) inputSeq!: string;
  @Column('bigint', { name: 'item_seq' }) itemSeq!: string;
  @Column('integer', { name: 'turn_seq' }) turnSeq!: number;
  @Column('integer', { name: 'pending_input_count' }) pendingInputCount!: number;
  @Column('jsonb', { name: 'current_turn', nullable: true }) currentTurn!: TurnSummary | null;
  /** Cooperation: the member's parent (null on a root), its tree's root (a root names itself), its depth (0: a root). */
  @Column('uuid', { name: 'parent_session_id', nullable: true }) parentSessionId!: string | null;
  @Column('uuid', { name: 'root_session_id' }) rootSessionId!: string;
  @Column('smallint') depth!: number;
  /** The coordinator's call that spawned this member (the member's id is derived from it). */
  @Column('uuid', { name: 'spawned_turn_id', nullable: true }) spawnedTurnId!: string | null;
  @Column('varchar', { name: 'spawned_call_id', nullable: true }) spawnedCallId!: string | null;
  /** A member's name (unique among its siblings) and task, as its coordinator gave them. */
  @Column('jsonb', { nullable: true }) subagent!: SubagentInfo | null;
  /** On a root whose agent enables multi_agent: at most this many members of the tree run at once. */
  @Column('smallint', { name: 'tree_max_concurrent', nullable: true }) treeMaxConcurrent!: number | null;
  /** On a root: when `yuxi.session.tree.stop` stopped the tree (null: not stopped, or continued). */
  @Column('timestamptz', { name: 'tree_stopped_at', nullable: true }) treeStoppedAt!: Date | null;
  /** Fork: the session and turn it was forked from (as the caller named them), and where; null on a session that is not a fork. */
  @Column('uuid', { name: 'forked_from_session_id', nullable: true }) forkedFromSessionId!: string | null;
  @Column('uuid', { name: 'forked_from_turn_id', nullable: true }) forkedFromTurnId!: string | null;
  @Column('varchar', { name: 'fork_position', nullable: true }) forkPosition!: ForkPosition | null;
  /** Fork: the highest inherited item and turn seq; the fork's own seqs start above them (bigint as a string, like itemSeq). */
  @Column('bigint', { name: 'fork_item_seq', nullable: true }) forkItemSeq!: string | null;
  @Column('integer', { name: 'fork_turn_seq', nullable: true }) forkTurnSeq!: number | null;
  /** The caller's string labels (bounded by the API; filterable in lists). */
  @Column('jsonb') metadata!: Record<string, string>;
  /**
   * Session TTL: the idle seconds after which the retention sweep archives, and deletes, the
   * session (its own, its project's and its agent's, resolved when it was created or updated:
   * libs/agents resolveSessionTtl); null: never, for idleness. Set on roots only: members follow their root.
   */
  @Column('integer', { name: 'ttl_archive_after_s', nullable: true }) ttlArchiveAfterS!: number | null;
  @Column('integer', { name: 'ttl_delete_after_s', nullable: true }) ttlDeleteAfterS!: number | null;
  /**
   * When the TTL sweep next looks at the session (session-ttl-check.ts); written at create, TTL
   * update and fork and by the sweep, never read into the entity (not in SESSION_COLUMNS, not selected).
   */
  @Column('timestamptz', { name: 'ttl_check_at', nullable: true, select: false }) ttlCheckAt?: Date | null;
  /** Bumped by every update made through the session routes; `If-Match` compares it. */
  @Column('integer') revision!: number;
  /** Soft delete: a deleted session is not found by any owner-scoped lookup. */
  @Column('timestamptz', { name: 'deleted_at', nullable: true }) deletedAt!: Date | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'last_active_at' }) lastActiveAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}

/**
 * The columns sessionFromRow reads, named rather than `*`: a prepared statement whose `*` meets a
 * column added by a later migration fails ("cached plan must not change result type").
 */
export const SESSION_COLUMNS =
  'id, owner_id, agent_id, model, tool_approval_mode, compaction_mode, instructions, agent_snapshot, trusted_tools, title, project_id, workdir_id, environment, is_pinned, archived, unread, queue_paused, ' +
  'input_seq, item_seq, turn_seq, pending_input_count, current_turn, parent_session_id, root_session_id, depth, spawned_turn_id, spawned_call_id, subagent, ' +
  'tree_max_concurrent, tree_stopped_at, forked_from_session_id, forked_from_turn_id, fork_position, fork_item_seq, fork_turn_seq, metadata, revision, deleted_at, created_at, last_active_at, updated_at, ' +
  'ttl_archive_after_s, ttl_delete_after_s';

/** Maps a raw `sessions` row (RETURNING / SELECT of SESSION_COLUMNS) onto the entity. */
export function sessionFromRow(row: Record<string, unknown>): SessionEntity {
  return Object.assign(new SessionEntity(), {
    id: row.id as string,
    ownerId: row.owner_id as string,
    agentId: row.agent_id as string,
    model: row.model as string,
    toolApprovalMode: row.tool_approval_mode as string,
    compactionMode: (row.compaction_mode as CompactionMode | null) ?? null,
    instructions: row.instructions as string,
    agentSnapshot: (row.agent_snapshot as AgentSnapshot | null) ?? null,
    trustedTools: (row.trusted_tools as string[] | null) ?? [],
    title: row.title as string,
    projectId: (row.project_id as string | null) ?? null,
    workdirId: row.workdir_id as string,
    environment: (row.environment as EnvironmentConfig | null) ?? null,
    isPinned: row.is_pinned as boolean,
    archived: row.archived as boolean,
    unread: row.unread as boolean,
    queuePaused: row.queue_paused as boolean,
    inputSeq: String(row.input_seq),
    itemSeq: String(row.item_seq),
    turnSeq: Number(row.turn_seq),
    pendingInputCount: Number(row.pending_input_count),
    currentTurn: (row.current_turn as TurnSummary | null) ?? null,
    parentSessionId: (row.parent_session_id as string | null) ?? null,
    rootSessionId: row.root_session_id as string,
    depth: Number(row.depth),
    spawnedTurnId: (row.spawned_turn_id as string | null) ?? null,
    spawnedCallId: (row.spawned_call_id as string | null) ?? null,
    subagent: (row.subagent as SubagentInfo | null) ?? null,
    treeMaxConcurrent: row.tree_max_concurrent === null || row.tree_max_concurrent === undefined ? null : Number(row.tree_max_concurrent),
    treeStoppedAt: (row.tree_stopped_at as Date | null) ?? null,
    forkedFromSessionId: (row.forked_from_session_id as string | null) ?? null,
    forkedFromTurnId: (row.forked_from_turn_id as string | null) ?? null,
    forkPosition: (row.fork_position as ForkPosition | null) ?? null,
    forkItemSeq: row.fork_item_seq === null || row.fork_item_seq === undefined ? null : String(row.fork_item_seq),
    forkTurnSeq: row.fork_turn_seq === null || row.fork_turn_seq === undefined ? null : Number(row.fork_turn_seq),
    metadata: (row.metadata as Record<string, string> | null) ?? {},
    revision: Number(row.revision ?? 1),
    ttlArchiveAfterS: row.ttl_archive_after_s === null || row.ttl_archive_after_s === undefined ? null : Number(row.ttl_archive_after_s),
    ttlDeleteAfterS: row.ttl_delete_after_s === null || row.ttl_delete_after_s === undefined ? null : Number(row.ttl_delete_after_s),
    deletedAt: (row.deleted_at as Date | null) ?? null,
    createdAt: row.created_at as Date,
    lastActiveAt: row.last_active_at as Date,
    updatedAt: row.updated_at as Date,
  });
}
