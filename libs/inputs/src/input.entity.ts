import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AgentSnapshot } from '#libs/agents';

export type InputMode = 'follow_up' | 'steer';
export type InputStatus = 'pending' | 'consumed' | 'cancelled';

/** One content block of a user message, as received (validated, never rewritten). */
export type InputContentBlock = { type: 'input_text'; text: string } | { type: 'input_image'; image_url: string };

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
  @Column('jsonb') config!: FrozenInputConfig;
  @Column('uuid', { name: 'turn_id', nullable: true }) turnId!: string | null;
  @Column('uuid', { name: 'run_id', nullable: true }) runId!: string | null;
  @Column('timestamptz', { name: 'received_at' }) receivedAt!: Date;
  @Column('timestamptz', { name: 'consumed_at', nullable: true }) consumedAt!: Date | null;
  @Column('timestamptz', { name: 'cancelled_at', nullable: true }) cancelledAt!: Date | null;
}
