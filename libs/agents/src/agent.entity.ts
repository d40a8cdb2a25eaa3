import { Column, Entity, PrimaryColumn } from 'typeorm';

export type ToolApprovalMode = 'ask' | 'always_trust';
export const TOOL_APPROVAL_MODES: readonly ToolApprovalMode[] = ['ask', 'always_trust'];

@Entity('agents')
export class AgentEntity {
  @PrimaryColumn('varchar') id!: string;
  /** null: a system agent every caller can see. */
  @Column('uuid', { name: 'owner_id', nullable: true }) ownerId!: string | null;
  @Column('text') name!: string;
  @Column('text') description!: string;
  @Column('text') instructions!: string;
  /** null: the deployment's DEFAULT_MODEL. */
  @Column('varchar', { nullable: true }) model!: string | null;
  @Column('varchar', { name: 'tool_approval_mode' }) toolApprovalMode!: ToolApprovalMode;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}
