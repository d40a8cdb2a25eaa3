import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('users')
export class UserEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') name!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
}

@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('text') name!: string;
  @Column('varchar') prefix!: string;
  @Column('char', { name: 'secret_hash' }) secretHash!: string;
  @Column('text', { array: true }) scopes!: string[];
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt!: Date | null;
}
