import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('sessions')
export class SessionEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'owner_id' }) ownerId!: string;
  @Column('varchar', { name: 'agent_id' }) agentId!: string;
  /** The session's configuration snapshot, frozen from the agent at creation; updates affect later inputs only. */
  @Column('varchar') model!: string;
  @Column('varchar', { name: 'tool_approval_mode' }) toolApprovalMode!: string;
  @Column('text') instructions!: string;
  @Column('text') title!: string;
  @Column('varchar', { name: 'project_id', nullable: true }) projectId!: string | null;
  @Column('boolean', { name: 'is_pinned' }) isPinned!: boolean;
  @Column('boolean') archived!: boolean;
  @Column('boolean') unread!: boolean;
  @Column('boolean', { name: 'queue_paused' }) queuePaused!: boolean;
  @Column('bigint', { name: 'input_seq' }) inputSeq!: string;
  @Column('bigint', { name: 'item_seq' }) itemSeq!: string;
  @Column('integer', { name: 'turn_seq' }) turnSeq!: number;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'last_active_at' }) lastActiveAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}
