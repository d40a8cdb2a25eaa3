import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { EventsModule, type OutboxAppend, type OutboxContribution, type OutboxSubscriber, OutboxSubscribers } from '#libs/events';
import { type StoredTraceContext, storedTraceContext } from '#libs/telemetry';
import { webhookPayloadOf } from './webhook-events.js';

/** The name the outbox keeps this subscriber's result under (OutboxBatch.fanOut): the endpoints to nudge after commit. */
export const WEBHOOK_FAN_OUT = 'webhooks';

/**
 * Webhooks subscribe to the session outbox: the append that inserts the events webhooks announce
 * (a turn's end, a waitpoint, a created session) writes their deliveries in the same statement, so
 * in the same transaction as the facts: one per enabled endpoint of the session's owner that takes
 * the type. An owner without endpoints costs an index probe, not a statement; a batch without such
 * events adds nothing.
 */
export function webhookFanOut(append: OutboxAppend): OutboxContribution | null {
  const hooks: string[] = [];
  for (const event of append.events) {
    const payload = webhookPayloadOf(event, append.seqToken);
    if (payload) hooks.push(`(${append.param(event.event_id)}, ${append.param(JSON.stringify(payload))}::text)`);
  }
  if (hooks.length === 0) return null;
  const session = append.sessionParam;
  const ins = append.rowsCte;
  const trace = deliveryTrace(append.param, storedTraceContext());
  return {
    ctes: [
      // Key-share locked: an endpoint deleted meanwhile is skipped, never a foreign-key failure of the fact's transaction.
      `wh_endpoints AS (SELECT id, event_types FROM webhook_endpoints WHERE owner_id = (SELECT owner_id FROM sessions WHERE id = ${session}::uuid) AND enabled FOR KEY SHARE)`,
      `wh_fan AS (INSERT INTO webhook_deliveries (id, endpoint_id, chain, seq, event_id, event_type, session_id, payload, status, next_attempt_at, created_at${trace.column})
         SELECT gen_random_uuid(), wh_endpoints.id, ${session}::uuid::text, ${ins}.seq, ${ins}.event_id, ${ins}.type, ${session}::uuid, replace(h.body, ${append.seqTokenParam}, ${ins}.seq::text), 'pending', now(), now()${trace.value}
         FROM ${ins} JOIN (VALUES ${hooks.join(', ')}) AS h(event_id, body) ON h.event_id = ${ins}.event_id
         JOIN wh_endpoints ON wh_endpoints.event_types IS NULL OR ${ins}.type = ANY (wh_endpoints.event_types)
         RETURNING endpoint_id)`,
    ],
    result: 'SELECT array_agg(DISTINCT endpoint_id::text) FROM wh_fan',
  };
}

/**
 * The `trace` column of the deliveries a fan-out writes: the active span's context (the turn's or
 * request's that caused the events), so each attempt's span joins that trace. Tracing off (or no
 * active span): neither column nor parameter, the statement as it always was.
 */
export function deliveryTrace(param: (value: unknown) => string, stored: StoredTraceContext | undefined): { column: string; value: string } {
  if (stored === undefined) return { column: '', value: '' };
  return { column: ', trace', value: `, ${param(JSON.stringify(stored))}::jsonb` };
}

@Injectable()
export class WebhookOutboxSubscriber implements OutboxSubscriber, OnModuleInit {
  readonly name = WEBHOOK_FAN_OUT;

  constructor(private readonly subscribers: OutboxSubscribers) {}

  onModuleInit(): void {
    this.subscribers.register(this);
  }

  contribute(append: OutboxAppend): OutboxContribution | null {
    return webhookFanOut(append);
  }
}

/**
 * Registers the webhook fan-out with the outbox: every process that appends session events (api,
 * worker, the ops CLI) imports it, or its appends would write no deliveries.
 */
@Module({
  imports: [EventsModule],
  providers: [WebhookOutboxSubscriber],
})
export class WebhookOutboxModule {}
