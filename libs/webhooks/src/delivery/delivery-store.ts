import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import type { StoredTraceContext } from '#libs/telemetry';
import type { WebhookAttemptRow } from '../webhooks.repository.js';
import { PENDING_DELIVERY } from '../webhook-states.js';

/** The head of a chain, leased for one attempt, with what signing and sending it need. */
export interface ClaimedDelivery {
  id: string;
  /** This attempt's number (1 for the first): the fence of its result. */
  attempt: number;
  eventId: string;
  eventType: string;
  payload: string;
  url: string;
  ownerId: string;
  endpointId: string;
  secretSealed: Buffer;
  /** The previous secret while it still signs (24 h after a rotation). */
  previousSecretSealed: Buffer | null;
  failingSince: Date | null;
  /** The database clock at the claim. */
  nowMs: number;
  /** The session whose event this is (null: a test send or an event of no session). */
  sessionId: string | null;
  /** The trace context the fan-out stored (tracing was on then): each attempt's span joins it. */
  trace: StoredTraceContext | null;
}

/** An attempt's log row (what the delivery log reads back), for its delivery. */
export interface AttemptRecord extends WebhookAttemptRow {
  deliveryId: string;
}

/** What the attempt leaves the delivery in: done, or due again after `retryInMs`. */
export type DeliveryNext = { status: 'succeeded' | 'failed' } | { status: 'pending'; retryInMs: number };

/** What the attempt does to its endpoint's health. */
export type EndpointChange = 'none' | 'ok' | 'failing' | { disable: 'gone' | 'failing' };

/**
 * The delivery side of the webhook tables, in SQL. Deliveries of a chain go out one at a time in
 * `seq` order: only the chain's oldest pending delivery may be claimed, and only when it is due
 * and not leased (a lease outlives an attempt; one left by a dead worker expires, by the database
 * clock). An attempt's result is written only by the attempt that holds the lease: the attempt
 * number fences it, as a run's epoch fences its steps.
 */
@Injectable()
export class DeliveryStore {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async claimHead(endpointId: string, chain: string, leaseMs: number): Promise<ClaimedDelivery | null> {
    const result: unknown = await this.dataSource.query(
      prepared(`UPDATE webhook_deliveries d SET attempts = d.attempts + 1, lease_until = now() + make_interval(secs => $3::double precision / 1000)
       FROM webhook_endpoints w
       WHERE d.id = (SELECT h.id FROM webhook_deliveries h WHERE h.endpoint_id = $1 AND h.chain = $2 AND ${PENDING_DELIVERY('h.status')} ORDER BY h.seq LIMIT 1)
         AND w.id = d.endpoint_id AND (w.enabled OR d.event_type = 'webhook.test')
         AND ${PENDING_DELIVERY('d.status')} AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
       RETURNING d.id, d.attempts, d.event_id, d.event_type, d.payload, d.session_id, d.trace, w.url, w.owner_id, w.secret_sealed,
         CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_sealed END AS previous_secret_sealed, w.failing_since,
         (extract(epoch FROM now()) * 1000)::float8 AS now_ms`),
      [endpointId, chain, leaseMs],
    );
    const row = (result as [Record<string, unknown>[], number])[0]?.[0];
    if (!row) return null;
    return {
      id: row.id as string,
      attempt: Number(row.attempts),
      eventId: row.event_id as string,
      eventType: row.event_type as string,
      payload: row.payload as string,
      url: row.url as string,
      ownerId: row.owner_id as string,
      endpointId,
      secretSealed: row.secret_sealed as Buffer,
      previousSecretSealed: (row.previous_secret_sealed as Buffer | null) ?? null,
      failingSince: (row.failing_since as Date | null) ?? null,
      nowMs: Number(row.now_ms),
      sessionId: (row.session_id as string | null) ?? null,
      trace: (row.trace as StoredTraceContext | null) ?? null,
    };
  }

  /**
   * Records an attempt and its consequences in one transaction: the log row, the delivery's next
   * state (fenced by the attempt number: a late result of an attempt whose lease expired changes
   * nothing but the log), and the endpoint's health. Returns whether the delivery row moved, and
   * whether the endpoint was disabled or recovered by this result (for the audit trail and logs).
   */
  async record(
    attempt: AttemptRecord,
    next: DeliveryNext,
    endpointId: string,
    change: EndpointChange,
    disableAfterS: number,
    audit: (manager: EntityManager, what: 'disabled' | 'recovered') => Promise<void>,
  ): Promise<{ moved: boolean; disabled: boolean; recovered: boolean }> {
    return this.dataSource.transaction(async (manager) => {
      // The endpoint first, as its delete does (then its deliveries): no deadlock with a delete,
      // and an endpoint deleted during the attempt leaves nothing to record.
      const endpoint = (await manager.query(prepared(`SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR KEY SHARE`), [endpointId])) as unknown[];
      if (endpoint.length === 0) return { moved: false, disabled: false, recovered: false };
      await manager.query(
        prepared(`INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, outcome, response_excerpt, error)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`),
        [attempt.deliveryId, attempt.attempt, attempt.startedAt, attempt.durationMs, attempt.statusCode, attempt.outcome, attempt.responseExcerpt, attempt.error],
      );
      const [, moved] = (await manager.query(
        prepared(`UPDATE webhook_deliveries SET status = $3::text, lease_until = NULL,
           next_attempt_at = CASE WHEN $3::text = 'pending' THEN now() + make_interval(secs => $4::double precision / 1000) ELSE next_attempt_at END,
           completed_at = CASE WHEN $3::text = 'pending' THEN NULL ELSE now() END
         WHERE id = $1 AND attempts = $2 AND ${PENDING_DELIVERY()}`),
        [attempt.deliveryId, attempt.attempt, next.status, next.status === 'pending' ? next.retryInMs : 0],
      )) as [unknown, number];
      let disabled = false;
      let recovered = false;
      if (moved === 1 && change !== 'none') {
        if (change === 'ok') {
          const [, n] = (await manager.query(prepared(`UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`), [endpointId])) as [unknown, number];
          recovered = n === 1;
        } else if (change === 'failing') {
          await manager.query(prepared(`UPDATE webhook_endpoints SET failing_since = now() WHERE id = $1 AND failing_since IS NULL`), [endpointId]);
        } else {
          // Failing is re-checked here: another chain's success may have stopped the clock since the claim.
          const [, n] = (await manager.query(
            prepared(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2::text, disabled_at = now(), failing_since = coalesce(failing_since, now()), updated_at = now()
             WHERE id = $1 AND enabled AND ($2::text = 'gone' OR failing_since <= now() - make_interval(secs => $3::double precision))`),
            [endpointId, change.disable, disableAfterS],
          )) as [unknown, number];
          disabled = n === 1;
          if (!disabled) await manager.query(prepared(`UPDATE webhook_endpoints SET failing_since = now() WHERE id = $1 AND failing_since IS NULL`), [endpointId]);
        }
        if (disabled) await audit(manager, 'disabled');
        if (recovered) await audit(manager, 'recovered');
      }
      return { moved: moved === 1, disabled, recovered };
    });
  }

  /**
   * Chains whose head is due and not leased (a lease left by a dead worker has expired): what the
   * sweep hands to jobs after a lost job, a Redis loss or a crash. A chain waiting for its head's
   * retry is not due, however many deliveries wait behind it.
   */
  async dueChains(limit: number): Promise<{ endpointId: string; chain: string; deliveryId: string; attempts: number }[]> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT h.endpoint_id, h.chain, h.id, h.attempts FROM (
         SELECT DISTINCT ON (d.endpoint_id, d.chain) d.endpoint_id, d.chain, d.id, d.attempts, d.next_attempt_at, d.lease_until, d.event_type
         FROM webhook_deliveries d WHERE ${PENDING_DELIVERY('d.status')} ORDER BY d.endpoint_id, d.chain, d.seq) h
       JOIN webhook_endpoints w ON w.id = h.endpoint_id
       WHERE h.next_attempt_at <= now() AND (h.lease_until IS NULL OR h.lease_until < now()) AND (w.enabled OR h.event_type = 'webhook.test')
       ORDER BY h.next_attempt_at LIMIT $1`),
      [limit],
    )) as { endpoint_id: string; chain: string; id: string; attempts: number }[];
    return rows.map((row) => ({ endpointId: row.endpoint_id, chain: row.chain, deliveryId: row.id, attempts: Number(row.attempts) }));
  }

  async pendingCount(): Promise<number> {
    const [row] = (await this.dataSource.query(prepared(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE ${PENDING_DELIVERY()}`))) as { n: number }[];
    return row?.n ?? 0;
  }

  /** Deletes finished deliveries (their attempts with them) older than the retention, a bounded batch at a time. */
  async prune(retentionSeconds: number, limit: number): Promise<number> {
    const [, deleted] = (await this.dataSource.query(
      prepared(`DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND completed_at < now() - make_interval(secs => $1::double precision) ORDER BY completed_at LIMIT $2)`),
      [retentionSeconds, limit],
    )) as [unknown, number];
    return deleted;
  }
}
