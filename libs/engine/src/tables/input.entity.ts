import type { StoredTraceContext } from '#libs/telemetry';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AgentSnapshot, CompactionMode } from '#libs/agents';
import type { EnvironmentConfig } from '#libs/environments';

import type { AttachmentStatus, InputMode, InputStatus } from '../machines/input-states.js';

export type { AttachmentStatus, InputMode, InputStatus } from '../machines/input-states.js';

/**
 * One content block of a user message, as received (validated), except that an inline image is
 * stored as a session file when its submission is accepted and kept as a reference: `file_id` and
 * `image_url`, the path of its bytes on this API. Inputs received before that keep their data URL
 * (no `file_id`).
 */
export type InputContentBlock = { type: 'input_text'; text: string } | { type: 'input_image'; image_url: string; file_id?: string };

export interface InputMessage {
  role: 'user';
  content: InputContentBlock[];
}

/** The configuration frozen when the input is received; the run that consumes it uses exactly this. */
export interface FrozenInputConfig {
  agent_id: string;
  model: string;
  tool_approval_mode: string;
  instructions: string;
  /** The session's agent snapshot (tools, limits); absent on inputs received before agents had them. */
  agent?: AgentSnapshot;
  /** The session's override of the agent's compaction mode, as of receipt. */
  compaction_mode?: CompactionMode;
  /** A member of a cooperation tree: its depth (absent on roots), which bounds whether it may spawn. */
  cooperation_depth?: number;
  /** A `yuxi.session.input.compact` request: the turn of this input only compacts the context. */
  compact?: { instructions?: string };
  /** The session's environment (absent: none): its turns get the harness's tools and run them in its workspace. */
  environment?: EnvironmentConfig;
  /**
   * The W3C trace context of the request that accepted the input (only while tracing is on): the
   * run that consumes it is a child of it on whichever worker runs it, a takeover included.
   */
  trace?: StoredTraceContext;
}

@Entity('inputs')
export class InputEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('bigint', { name: 'received_seq' }) receivedSeq!: string;
  @Column('varchar') mode!: InputMode;
  /** Claimed before lower priorities: 1 for a message that resumes a paused queue. */
  @Column('smallint') priority!: number;
  @Column('varchar') status!: InputStatus;
  @Column('jsonb') messages!: InputMessage[];
  @Column('jsonb', { name: 'attachment_file_ids' }) attachmentFileIds!: string[];
  @Column('varchar', { name: 'attachment_status' }) attachmentStatus!: AttachmentStatus;
  /** Why the last preparation attempt failed (kept while preparing; the recovery sweep retries). */
  @Column('text', { name: 'attachment_error', nullable: true }) attachmentError!: string | null;
  @Column('jsonb') config!: FrozenInputConfig;
  @Column('uuid', { name: 'turn_id', nullable: true }) turnId!: string | null;
  @Column('uuid', { name: 'run_id', nullable: true }) runId!: string | null;
  @Column('timestamptz', { name: 'received_at' }) receivedAt!: Date;
  @Column('timestamptz', { name: 'consumed_at', nullable: true }) consumedAt!: Date | null;
  @Column('timestamptz', { name: 'cancelled_at', nullable: true }) cancelledAt!: Date | null;
}

export const INPUT_COLUMNS =
  'id, session_id, received_seq, mode, priority, status, messages, attachment_file_ids, attachment_status, attachment_error, config, turn_id, run_id, received_at, consumed_at, cancelled_at';

/** A row of INPUT_COLUMNS, read with raw SQL, as the entity. */
export function inputFromRow(row: Record<string, unknown>): InputEntity {
  return {
    id: String(row.id),
    sessionId: String(row.session_id),
    receivedSeq: String(row.received_seq),
    mode: row.mode as InputMode,
    priority: Number(row.priority),
    status: row.status as InputStatus,
    messages: row.messages as InputMessage[],
    attachmentFileIds: row.attachment_file_ids as string[],
    attachmentStatus: row.attachment_status as AttachmentStatus,
    attachmentError: (row.attachment_error as string | null) ?? null,
    config: row.config as FrozenInputConfig,
    turnId: (row.turn_id as string | null) ?? null,
    runId: (row.run_id as string | null) ?? null,
    receivedAt: row.received_at as Date,
    consumedAt: (row.consumed_at as Date | null) ?? null,
    cancelledAt: (row.cancelled_at as Date | null) ?? null,
  };
}
