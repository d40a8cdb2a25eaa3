import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { SessionTtl } from '#libs/agents';

/** A project: an owner's named group of sessions that share one workdir (its id is the workdir's). */
@Entity('projects')
export class ProjectEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'owner_id' }) ownerId!: string;
  @Column('text') name!: string;
  @Column('text') description!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
  /** Soft delete: a deleted project is gone for its owner; its sessions keep their history and files. */
  @Column('timestamptz', { name: 'deleted_at', nullable: true }) deletedAt!: Date | null;
  /** The TTL of its sessions (a session may shorten it, never lengthen it); null: none. */
  @Column('jsonb', { nullable: true }) ttl!: SessionTtl | null;
}

/** The columns projectFromRow reads (named, never `*`: see SESSION_COLUMNS). */
export const PROJECT_COLUMNS = 'id, owner_id, name, description, created_at, updated_at, deleted_at, ttl';

export function projectFromRow(row: Record<string, unknown>): ProjectEntity {
  return Object.assign(new ProjectEntity(), {
    id: row.id as string,
    ownerId: row.owner_id as string,
    name: row.name as string,
    description: row.description as string,
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
    deletedAt: (row.deleted_at as Date | null) ?? null,
    ttl: (row.ttl as SessionTtl | null) ?? null,
  });
}
