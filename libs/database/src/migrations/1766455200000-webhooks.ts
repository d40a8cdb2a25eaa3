import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks (libs/webhooks). An endpoint belongs to its owner like a session does. A delivery is
 * written by the outbox's own INSERT (libs/events), in the transaction of the fact it announces,
 * so nothing committed is missed and nothing uncommitted is announced. Deliveries of one chain
 * (an endpoint and a session) go out in `seq` order: only the oldest pending one of a chain may be
 * attempted, under a lease (the database clock) that a crashed worker's successor waits out. Each
 * attempt leaves a row: the delivery log the owner reads.
 */
export class Webhooks1766455200000 implements MigrationInterface {
  name = 'Webhooks1766455200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_endpoints (
        id uuid PRIMARY KEY,
        owner_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        url text NOT NULL CONSTRAINT webhook_endpoints_url_size CHECK (length(url) BETWEEN 8 AND 2048),
        description text NOT NULL DEFAULT '' CONSTRAINT webhook_endpoints_description_size CHECK (length(description) <= 500),
        -- null: every event type
        event_types text[] CONSTRAINT webhook_endpoints_event_types_size CHECK (event_types IS NULL OR cardinality(event_types) BETWEEN 1 AND 32),
        enabled boolean NOT NULL,
        disabled_reason varchar(16) CONSTRAINT webhook_endpoints_disabled_reason CHECK (disabled_reason IN ('manual', 'gone', 'failing')),
        disabled_at timestamptz,
        failing_since timestamptz,
        secret_sealed bytea NOT NULL,
        previous_secret_sealed bytea,
        previous_secret_expires_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT webhook_endpoints_disabled_shape CHECK ((enabled AND disabled_reason IS NULL AND disabled_at IS NULL) OR (NOT enabled AND disabled_reason IS NOT NULL AND disabled_at IS NOT NULL)),
        CONSTRAINT webhook_endpoints_previous_secret_shape CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL))
      )`);
    await q.query(`CREATE INDEX webhook_endpoints_owner_page_idx ON webhook_endpoints (owner_id, created_at, id)`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY,
        endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        -- the session id for the events of a session; the delivery's own id for a test send or a redelivery
        chain text NOT NULL,
        seq bigint NOT NULL,
        event_id text NOT NULL,
        event_type varchar(64) NOT NULL,
        session_id uuid,
        payload text NOT NULL,
        status varchar(16) NOT NULL CONSTRAINT webhook_deliveries_status CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts integer NOT NULL DEFAULT 0 CONSTRAINT webhook_deliveries_attempts_positive CHECK (attempts >= 0),
        next_attempt_at timestamptz NOT NULL,
        lease_until timestamptz,
        redelivery_of uuid REFERENCES webhook_deliveries(id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL,
        completed_at timestamptz,
        CONSTRAINT webhook_deliveries_completed_shape CHECK ((status = 'pending') = (completed_at IS NULL))
      )`);
    // The head of each chain, and what is due: both only over pending rows, which stay few.
    await q.query(`CREATE INDEX webhook_deliveries_chain_idx ON webhook_deliveries (endpoint_id, chain, seq) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_endpoint_page_idx ON webhook_deliveries (endpoint_id, created_at, id)`);
    await q.query(`CREATE INDEX webhook_deliveries_completed_idx ON webhook_deliveries (completed_at) WHERE status <> 'pending'`);
    // The ON DELETE SET NULL of a redelivery's original: pruning and endpoint deletes look it up.
    await q.query(`CREATE INDEX webhook_deliveries_redelivery_idx ON webhook_deliveries (redelivery_of) WHERE redelivery_of IS NOT NULL`);
    await q.query(`
      CREATE TABLE webhook_attempts (
        delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt integer NOT NULL CONSTRAINT webhook_attempts_attempt_positive CHECK (attempt >= 1),
        started_at timestamptz NOT NULL,
        duration_ms integer NOT NULL CONSTRAINT webhook_attempts_duration CHECK (duration_ms >= 0),
        status_code integer,
        outcome varchar(16) NOT NULL CONSTRAINT webhook_attempts_outcome CHECK (outcome IN ('succeeded', 'failed', 'timeout', 'network_error', 'blocked')),
        response_excerpt text NOT NULL DEFAULT '' CONSTRAINT webhook_attempts_excerpt_size CHECK (length(response_excerpt) <= 1024),
        error text CONSTRAINT webhook_attempts_error_size CHECK (length(error) <= 500),
        PRIMARY KEY (delivery_id, attempt)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_attempts`);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhook_endpoints`);
  }
}
