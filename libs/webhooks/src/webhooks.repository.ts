import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, type Page, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { type StoredTraceContext, storedTraceContext } from '#libs/telemetry';
import type { WebhookAttemptOutcome, WebhookDisabledReason } from './webhook.dto.js';
import { PENDING_DELIVERY, type WebhookDeliveryStatus } from './webhook-states.js';
import type { WebhookEventType } from './webhook-events.js';

/** An endpoint as stored (its secrets sealed). */
export interface WebhookEndpointRow {
  id: string;
  ownerId: string;
  url: string;
  description: string;
  eventTypes: WebhookEventType[] | null;
  enabled: boolean;
  disabledReason: WebhookDisabledReason | null;
  disabledAt: Date | null;
  failingSince: Date | null;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookAttemptRow {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: WebhookAttemptOutcome;
  responseExcerpt: string;
  error: string | null;
}

export interface WebhookDeliveryRow {
  id: string;
  endpointId: string;
  chain: string;
  eventId: string;
  eventType: WebhookEventType;
  sessionId: string | null;
  status: WebhookDeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  redeliveryOf: string | null;
  createdAt: Date;
  completedAt: Date | null;
  log: WebhookAttemptRow[];
}

export interface NewWebhookEndpoint {
  id: string;
  ownerId: string;
  url: string;
  description: string;
  eventTypes: WebhookEventType[] | null;
  enabled: boolean;
  secretSealed: Buffer;
}

export interface WebhookEndpointPatch {
  url?: string;
  description?: string;
  eventTypes?: WebhookEventType[] | null;
  enabled?: boolean;
}

const ENDPOINT_COLUMNS =
  'id, owner_id, url, description, event_types, enabled, disabled_reason, disabled_at, failing_since, secret_sealed, previous_secret_sealed, previous_secret_expires_at, created_at, updated_at';
const DELIVERY_COLUMNS = 'd.id, d.endpoint_id, d.chain, d.event_id, d.event_type, d.session_id, d.status, d.attempts, d.next_attempt_at, d.redelivery_of, d.created_at, d.completed_at';
/** The rotated-out secret signs along for a day, so receivers can switch without losing a delivery. */
const PREVIOUS_SECRET_HOURS = 24;

/**
 * The endpoints and their delivery log, in SQL. Endpoints are visible as sessions are: to their
 * owner only; another owner's is not found. Deleting one deletes its deliveries.
 */
@Injectable()
export class WebhooksRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Inserts the endpoint unless its owner has `max` already (counted under a lock on the owner's user row, so two creates cannot both pass). */
  async create(endpoint: NewWebhookEndpoint, max: number): Promise<WebhookEndpointRow | null> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(prepared(`SELECT 1 FROM users WHERE id = $1 FOR UPDATE`), [endpoint.ownerId]);
      const [{ n }] = (await manager.query(prepared(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE owner_id = $1`), [endpoint.ownerId])) as { n: number }[];
      if (n >= max) return null;
      const [row] = (await manager.query(
        prepared(`INSERT INTO webhook_endpoints (id, owner_id, url, description, event_types, enabled, disabled_reason, disabled_at, secret_sealed, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5::text[], $6, CASE WHEN $6 THEN NULL ELSE 'manual' END, CASE WHEN $6 THEN NULL ELSE now() END, $7, now(), now())
         RETURNING ${ENDPOINT_COLUMNS}`),
        [endpoint.id, endpoint.ownerId, endpoint.url, endpoint.description, endpoint.eventTypes, endpoint.enabled, endpoint.secretSealed],
      )) as Record<string, unknown>[];
      return endpointFromRow(row!);
    });
  }

  async get(ownerId: string, id: string): Promise<WebhookEndpointRow> {
    const rows = isUuid(id)
      ? ((await this.dataSource.query(prepared(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND owner_id = $2`), [id, ownerId])) as Record<string, unknown>[])
      : [];
    if (!rows[0]) throw DomainError.notFound(`Webhook endpoint ${id}`);
    return endpointFromRow(rows[0]);
  }

  async list(ownerId: string, page: { after?: string; limit: number; order: 'asc' | 'desc' }): Promise<Page<WebhookEndpointRow>> {
    const values: unknown[] = [ownerId, page.limit + 1];
    let after = '';
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? ((await this.dataSource.query(prepared(`SELECT 1 FROM webhook_endpoints WHERE id = $1 AND owner_id = $2`), [page.after, ownerId])) as unknown[]) : [];
      if (anchor.length === 0) throw new DomainError('invalid_cursor', 'The `after` cursor is not a webhook endpoint of this caller');
      values.push(page.after);
      after = `AND (created_at, id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM webhook_endpoints WHERE id = $3)`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE owner_id = $1 ${after} ORDER BY created_at ${direction}, id ${direction} LIMIT $2`,
      values,
    )) as Record<string, unknown>[];
    return toPage(rows.map(endpointFromRow), page.limit);
  }

  /**
   * Applies the given fields. Disabling records why (`manual`); enabling clears that and the
   * failure clock, and (`resumePending`: it was disabled) makes the deliveries still pending due now.
   */
  async update(ownerId: string, id: string, patch: WebhookEndpointPatch, resumePending: boolean): Promise<WebhookEndpointRow> {
    if (!isUuid(id)) throw DomainError.notFound(`Webhook endpoint ${id}`);
    return this.dataSource.transaction(async (manager) => {
      const result: unknown = await manager.query(
        prepared(`UPDATE webhook_endpoints SET
           url = coalesce($3, url),
           description = coalesce($4, description),
           event_types = CASE WHEN $5 THEN $6::text[] ELSE event_types END,
           enabled = coalesce($7, enabled),
           disabled_reason = CASE WHEN $7 IS NULL THEN disabled_reason WHEN $7 THEN NULL WHEN enabled THEN 'manual' ELSE disabled_reason END,
           disabled_at = CASE WHEN $7 IS NULL THEN disabled_at WHEN $7 THEN NULL WHEN enabled THEN now() ELSE disabled_at END,
           failing_since = CASE WHEN $7 AND NOT enabled THEN NULL ELSE failing_since END,
           updated_at = now()
         WHERE id = $1 AND owner_id = $2
         RETURNING ${ENDPOINT_COLUMNS}`),
        [id, ownerId, patch.url ?? null, patch.description ?? null, patch.eventTypes !== undefined, patch.eventTypes ?? null, patch.enabled ?? null],
      );
      const updated = firstRow(result);
      if (!updated) throw DomainError.notFound(`Webhook endpoint ${id}`);
      if (resumePending) {
        await manager.query(prepared(`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE endpoint_id = $1 AND ${PENDING_DELIVERY()} AND next_attempt_at > now()`), [id]);
      }
      return endpointFromRow(updated);
    });
  }

  async delete(ownerId: string, id: string): Promise<void> {
    if (!isUuid(id)) throw DomainError.notFound(`Webhook endpoint ${id}`);
    const [, count] = (await this.dataSource.query(prepared(`DELETE FROM webhook_endpoints WHERE id = $1 AND owner_id = $2`), [id, ownerId])) as [unknown, number];
    if (count !== 1) throw DomainError.notFound(`Webhook endpoint ${id}`);
  }

  /** The current secret becomes the previous one, signing along for a day; `sealed` becomes current. */
  async rotate(ownerId: string, id: string, sealed: Buffer): Promise<WebhookEndpointRow> {
    if (!isUuid(id)) throw DomainError.notFound(`Webhook endpoint ${id}`);
    const rows: unknown = await this.dataSource.query(
      prepared(`UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, previous_secret_expires_at = now() + make_interval(hours => ${PREVIOUS_SECRET_HOURS}),
         secret_sealed = $3, updated_at = now()
       WHERE id = $1 AND owner_id = $2 RETURNING ${ENDPOINT_COLUMNS}`),
      [id, ownerId, sealed],
    );
    const row = firstRow(rows);
    if (!row) throw DomainError.notFound(`Webhook endpoint ${id}`);
    return endpointFromRow(row);
  }

  /**
   * A delivery outside any session's order: a test send (`payload` new) or a redelivery (a copy of
   * one of the endpoint's deliveries, same event id). Its chain is its own id: it waits for no one.
   */
  /**
   * `trace`: the context the attempts' spans join — a redelivery's is its original's; otherwise (or
   * when the original had none) the active span's (the request that asked for it), none when tracing is off.
   */
  async insertStandalone(
    manager: EntityManager | null,
    delivery: { id: string; endpointId: string; eventId: string; eventType: WebhookEventType; sessionId: string | null; payload: string; redeliveryOf: string | null; trace?: StoredTraceContext | null },
  ): Promise<void> {
    const trace = delivery.trace ?? storedTraceContext() ?? null;
    const params: unknown[] = [delivery.id, delivery.endpointId, delivery.eventId, delivery.eventType, delivery.sessionId, delivery.payload, delivery.redeliveryOf, delivery.id];
    // A trace column and parameter only with a context to store (tracing off: the insert as it was).
    if (trace !== null) params.push(JSON.stringify(trace));
    await (manager ?? this.dataSource.manager).query(
      prepared(`INSERT INTO webhook_deliveries (id, endpoint_id, chain, seq, event_id, event_type, session_id, payload, status, next_attempt_at, redelivery_of, created_at${trace === null ? '' : ', trace'})
       VALUES ($1, $2, $8, 0, $3, $4, $5, $6, 'pending', now(), $7, now()${trace === null ? '' : ', $9::jsonb'})`),
      params,
    );
  }

  /** One of the endpoint's deliveries with what a redelivery copies; null when it has none of that id. */
  async deliveryPayload(endpointId: string, deliveryId: string): Promise<{ eventId: string; eventType: WebhookEventType; sessionId: string | null; payload: string; trace: StoredTraceContext | null } | null> {
    if (!isUuid(deliveryId)) return null;
    const [row] = (await this.dataSource.query(prepared(`SELECT event_id, event_type, session_id, payload, trace FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2`), [
      deliveryId,
      endpointId,
    ])) as { event_id: string; event_type: WebhookEventType; session_id: string | null; payload: string; trace: StoredTraceContext | null }[];
    return row ? { eventId: row.event_id, eventType: row.event_type, sessionId: row.session_id, payload: row.payload, trace: row.trace } : null;
  }

  async delivery(endpointId: string, deliveryId: string): Promise<WebhookDeliveryRow | null> {
    const rows = (await this.dataSource.query(`${deliverySelect('d.id = $1 AND d.endpoint_id = $2')}`, [deliveryId, endpointId])) as Record<string, unknown>[];
    return rows[0] ? deliveryFromRow(rows[0]) : null;
  }

  /** The endpoint's deliveries, newest first, each with its attempts. */
  async deliveries(endpointId: string, page: { after?: string; limit: number; status?: string }): Promise<Page<WebhookDeliveryRow>> {
    const values: unknown[] = [endpointId, page.limit + 1];
    const where = ['d.endpoint_id = $1'];
    if (page.status !== undefined) {
      values.push(page.status);
      where.push(`d.status = $${values.length}`);
    }
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? ((await this.dataSource.query(prepared(`SELECT 1 FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2`), [page.after, endpointId])) as unknown[]) : [];
      if (anchor.length === 0) throw new DomainError('invalid_cursor', 'The `after` cursor is not a delivery of this endpoint');
      values.push(page.after);
      where.push(`(d.created_at, d.id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = $${values.length})`);
    }
    const rows = (await this.dataSource.query(`${deliverySelect(where.join(' AND '))} ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, values)) as Record<string, unknown>[];
    return toPage(rows.map(deliveryFromRow), page.limit);
  }
}

function deliverySelect(where: string): string {
  return `SELECT ${DELIVERY_COLUMNS},
      coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'started_at', extract(epoch FROM a.started_at)::bigint, 'duration_ms', a.duration_ms,
          'status_code', a.status_code, 'outcome', a.outcome, 'response_excerpt', a.response_excerpt, 'error', a.error) ORDER BY a.attempt)
        FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS log
    FROM webhook_deliveries d WHERE ${where}`;
}

function firstRow(result: unknown): Record<string, unknown> | undefined {
  // An UPDATE … RETURNING answers [rows, count] through TypeORM's query().
  if (Array.isArray(result) && Array.isArray(result[0])) return (result[0] as Record<string, unknown>[])[0];
  return Array.isArray(result) ? (result[0] as Record<string, unknown> | undefined) : undefined;
}

export function endpointFromRow(row: Record<string, unknown>): WebhookEndpointRow {
  return {
    id: row.id as string,
    ownerId: row.owner_id as string,
    url: row.url as string,
    description: row.description as string,
    eventTypes: (row.event_types as WebhookEventType[] | null) ?? null,
    enabled: row.enabled as boolean,
    disabledReason: (row.disabled_reason as WebhookDisabledReason | null) ?? null,
    disabledAt: (row.disabled_at as Date | null) ?? null,
    failingSince: (row.failing_since as Date | null) ?? null,
    secretSealed: row.secret_sealed as Buffer,
    previousSecretSealed: (row.previous_secret_sealed as Buffer | null) ?? null,
    previousSecretExpiresAt: (row.previous_secret_expires_at as Date | null) ?? null,
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

function deliveryFromRow(row: Record<string, unknown>): WebhookDeliveryRow {
  const log = (row.log as Record<string, unknown>[]).map((a) => ({
    attempt: Number(a.attempt),
    startedAt: new Date(Number(a.started_at) * 1000),
    durationMs: Number(a.duration_ms),
    statusCode: a.status_code === null ? null : Number(a.status_code),
    outcome: a.outcome as WebhookAttemptOutcome,
    responseExcerpt: a.response_excerpt as string,
    error: (a.error as string | null) ?? null,
  }));
  return {
    id: row.id as string,
    endpointId: row.endpoint_id as string,
    chain: row.chain as string,
    eventId: row.event_id as string,
    eventType: row.event_type as WebhookEventType,
    sessionId: (row.session_id as string | null) ?? null,
    status: row.status as WebhookDeliveryRow['status'],
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at as Date,
    redeliveryOf: (row.redelivery_of as string | null) ?? null,
    createdAt: row.created_at as Date,
    completedAt: (row.completed_at as Date | null) ?? null,
    log,
  };
}
