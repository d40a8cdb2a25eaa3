import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The public acceptance receipt (`yuxi.session.event.accepted`). */
export interface AcceptedReceipt {
  object: 'yuxi.session.event.accepted';
  event_id: string;
  session_id: string;
  input_id: string | null;
  turn_id: string | null;
  run_id: string | null;
  status: 'accepted';
}

/**
 * One row per idempotency scope: the unique (owner, scope, key) constraint is what serialises
 * concurrent duplicates, and the stored response is replayed byte for byte.
 */
@Entity('idempotency_receipts')
export class IdempotencyReceiptEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'owner_id' }) ownerId!: string;
  @Column('varchar') scope!: string;
  @Column('varchar', { name: 'idempotency_key' }) idempotencyKey!: string;
  @Column('char', { name: 'request_hash' }) requestHash!: string;
  @Column('uuid', { name: 'session_id', nullable: true }) sessionId!: string | null;
  @Column('uuid', { name: 'input_id', nullable: true }) inputId!: string | null;
  @Column('jsonb', { nullable: true }) receipt!: AcceptedReceipt | null;
  @Column('integer', { name: 'response_status', nullable: true }) responseStatus!: number | null;
  @Column('text', { name: 'response_body', nullable: true }) responseBody!: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt!: Date;
}
