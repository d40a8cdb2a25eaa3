import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AuditLog } from '#libs/audit';
import { AppConfig, ThrottledLog } from '#libs/config';
import { metrics } from '#libs/metrics';
import { contextOf, endSpan, injectTraceHeaders, SESSION_ATTRIBUTE, type Span, SpanKind, startSpan, tracingOn, TURN_ATTRIBUTE, withSpan } from '#libs/telemetry';
import { WebhookJobs } from '#libs/queue';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { guardedLookup } from './address-policy.js';
import { type ClaimedDelivery, type DeliveryNext, DeliveryStore, type EndpointChange } from './delivery-store.js';
import { endpointVerdict, parseRetryAfter, parseRetrySchedule, retryDelayMs } from './retry-schedule.js';
import { signatureHeader } from './signature.js';
import { type SendResult, WebhookSender } from './webhook-sender.js';

/** Deliveries one job attempts at most before it hands the chain to a fresh job (fairness between chains). */
const CHAIN_RUN_MAX = 50;
/** A lease outlives its attempt by this much: the result is written well before another worker may claim. */
const LEASE_MARGIN_MS = 15_000;

/**
 * One attempt's CLIENT span, a child of the context the fan-out stored (a new trace when none):
 * HTTP client conventions. `url.full` is the endpoint's origin only (scheme, host, port): chat
 * webhooks (Slack, Discord) carry their secret token in the path, and a query may hold one too;
 * spans leave the server (an OTLP collector, the session's trace route).
 */
function deliverySpan(claimed: ClaimedDelivery): Span | undefined {
  let url: string;
  try {
    const origin = new URL(claimed.url).origin;
    url = origin === 'null' ? '' : origin;
  } catch {
    url = '';
  }
  return startSpan('webhook.deliver', {
    kind: SpanKind.CLIENT,
    parent: contextOf(claimed.trace),
    attributes: {
      'http.request.method': 'POST',
      ...(url ? { 'url.full': url } : {}),
      'yuxi.webhook.endpoint_id': claimed.endpointId,
      'yuxi.webhook.event_type': claimed.eventType,
      'yuxi.webhook.attempt': claimed.attempt,
      ...(claimed.sessionId ? { [SESSION_ATTRIBUTE]: claimed.sessionId } : {}),
      ...deliveryTurnAttribute(claimed.payload),
    },
  });
}

const TURN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * `yuxi.turn_id` of an attempt whose event is a turn's (`data.turn_id` of the payload the fan-out
 * wrote): the span is then that turn's in the session's store, shown in its trace entry only (a
 * span of no turn would be in none). Tracing on only: the payload is parsed for the span alone.
 */
export function deliveryTurnAttribute(payload: string): Record<string, string> {
  try {
    const turnId = (JSON.parse(payload) as { data?: { turn_id?: unknown } } | null)?.data?.turn_id;
    return typeof turnId === 'string' && TURN_ID.test(turnId) ? { [TURN_ATTRIBUTE]: turnId } : {};
  } catch {
    return {};
  }
}

/** Ends an attempt's span: the status the endpoint answered; ERROR unless the attempt succeeded. */
function endDeliverySpan(span: Span, result: SendResult): void {
  const attributes = result.statusCode === null ? {} : { 'http.response.status_code': result.statusCode };
  if (result.outcome === 'succeeded') endSpan(span, undefined, attributes);
  else endSpan(span, Object.assign(new Error(result.error || result.outcome), { code: result.statusCode === null ? result.outcome : String(result.statusCode) }), attributes);
}

/**
 * The delivery engine (each worker): attempts the head of a chain, signs it afresh (Standard
 * Webhooks: same `webhook-id`, new timestamp), records the attempt, then moves on to the next head
 * while attempts succeed. A failure schedules the chain's next job at its retry time (BullMQ
 * delayed job); the sweep puts back what Redis or a crash lost. An endpoint that answers 410, or
 * that has failed for WEBHOOK_DISABLE_AFTER_S, is disabled (audited, logged, counted).
 */
@Injectable()
export class WebhookDeliverer implements OnApplicationShutdown {
  private readonly log = new ThrottledLog(new Logger(WebhookDeliverer.name));
  private readonly logger = new Logger(WebhookDeliverer.name);
  private readonly schedule: number[];
  private readonly sender: WebhookSender;
  private readonly box: WebhookSecretBox;
  private stopping = false;

  constructor(
    private readonly store: DeliveryStore,
    private readonly jobs: WebhookJobs,
    private readonly audit: AuditLog,
    private readonly config: AppConfig,
  ) {
    // Fails the boot on a malformed WEBHOOK_RETRY_SCHEDULE rather than at the first failure.
    this.schedule = parseRetrySchedule(config.webhookRetrySchedule);
    this.sender = new WebhookSender(guardedLookup(config.webhookAllowPrivateNetworks), config.webhookAllowPrivateNetworks);
    this.box = new WebhookSecretBox(config.secretsKey);
  }

  /** One job: the chain's due heads, in order, until one fails, none is due, or the run's cap. */
  async deliverChain(endpointId: string, chain: string): Promise<void> {
    for (let i = 0; i < CHAIN_RUN_MAX && !this.stopping; i += 1) {
      const claimed = await this.store.claimHead(endpointId, chain, this.config.webhookTimeoutMs + LEASE_MARGIN_MS);
      if (!claimed) return;
      const next = await this.attempt(claimed);
      if (next.status === 'pending') {
        await this.jobs.later({ endpointId, chain }, next.retryInMs, `retry:${claimed.id}:${claimed.attempt}`).catch((error: unknown) => {
          metrics.redisError('queue');
          this.log.warn(`webhook retries cannot be queued; the webhook sweep will attempt them: ${String(error)}`);
        });
        return;
      }
      if (claimed.eventType === 'webhook.test') return;
    }
    // More of this chain is due (or this worker stops): another job goes on with it, after the others queued.
    await this.jobs.nudgeQuietly([{ endpointId, chain }]);
  }

  /** Shutdown: each job ends after its attempt in flight and hands its chain on, so closing the consumer waits for one attempt at most. */
  stop(): void {
    this.stopping = true;
  }

  private async attempt(claimed: ClaimedDelivery): Promise<DeliveryNext> {
    const startedAt = new Date();
    const result = tracingOn() ? await this.sendTraced(claimed) : await this.send(claimed);
    metrics.webhookAttempt(result.outcome, result.durationMs / 1000);
    const test = claimed.eventType === 'webhook.test';
    const ok = result.outcome === 'succeeded';
    const verdict = endpointVerdict({
      status: ok ? (result.statusCode ?? 200) : result.statusCode === 410 ? 410 : null,
      failingSinceMs: claimed.failingSince?.getTime() ?? null,
      nowMs: claimed.nowMs,
      disableAfterMs: this.config.webhookDisableAfterS * 1000,
    });
    // A test send is one attempt that says how the endpoint answers; it changes nothing about it.
    const change: EndpointChange = test ? 'none' : verdict === 'ok' ? 'ok' : verdict === 'failing' ? 'failing' : { disable: verdict === 'disable_gone' ? 'gone' : 'failing' };
    let next: DeliveryNext;
    if (ok) next = { status: 'succeeded' };
    else if (test || typeof change === 'object') next = { status: 'failed' };
    else {
      const delay = retryDelayMs(claimed.attempt - 1, this.schedule, Math.random, parseRetryAfter(result.retryAfter, Date.now()));
      next = delay === null ? { status: 'failed' } : { status: 'pending', retryInMs: delay };
    }
    const recorded = await this.store.record(
      { deliveryId: claimed.id, attempt: claimed.attempt, startedAt, durationMs: result.durationMs, statusCode: result.statusCode, outcome: result.outcome, responseExcerpt: result.responseExcerpt, error: result.error },
      next,
      claimed.endpointId,
      change,
      this.config.webhookDisableAfterS,
      (manager, what) => this.auditChange(manager, claimed, what, typeof change === 'object' ? change.disable : null, result),
    );
    if (!recorded.moved) return { status: 'failed' };
    if (next.status !== 'pending') metrics.webhookDelivered(next.status);
    if (recorded.disabled && typeof change === 'object') {
      metrics.webhookEndpointDisabled(change.disable);
      this.logger.warn(`webhook endpoint ${claimed.endpointId} disabled (${change.disable === 'gone' ? 'it answered 410 Gone' : 'its deliveries kept failing'})`);
    }
    if (recorded.recovered) this.logger.log(`webhook endpoint ${claimed.endpointId} recovered: a delivery succeeded after failures`);
    return next;
  }

  /** An attempt inside its span, which ends however the attempt ends (an error thrown recorded on it, and rethrown). */
  private async sendTraced(claimed: ClaimedDelivery): Promise<SendResult> {
    const span = deliverySpan(claimed);
    if (!span) return this.send(claimed);
    let result: SendResult;
    try {
      result = await withSpan(span, () => this.send(claimed));
    } catch (error) {
      endSpan(span, error);
      throw error;
    }
    endDeliverySpan(span, result);
    return result;
  }

  private async send(claimed: ClaimedDelivery): Promise<SendResult> {
    let secrets: string[];
    try {
      secrets = [this.box.open(claimed.secretSealed, claimed.endpointId)];
      if (claimed.previousSecretSealed) secrets.push(this.box.open(claimed.previousSecretSealed, claimed.endpointId));
    } catch (error) {
      // SECRETS_KEY changed under stored secrets: nothing can be signed until the owner rotates.
      return { outcome: 'failed', statusCode: null, durationMs: 0, responseExcerpt: '', error: `the signing secret cannot be opened: ${String(error)}`.slice(0, 500), retryAfter: null };
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const headers: Record<string, string> = { 'webhook-id': claimed.eventId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader(secrets, claimed.eventId, timestamp, claimed.payload) };
    // The attempt's span (tracing on): the receiver's spans join the trace that caused the event.
    injectTraceHeaders(headers);
    return this.sender.send({ url: claimed.url, body: claimed.payload, timeoutMs: this.config.webhookTimeoutMs, headers });
  }

  private async auditChange(manager: EntityManager, claimed: ClaimedDelivery, what: 'disabled' | 'recovered', reason: string | null, result: SendResult): Promise<void> {
    await this.audit.record(manager, {
      actorId: null,
      keyId: null,
      action: what === 'disabled' ? 'webhook_endpoint.disabled' : 'webhook_endpoint.recovered',
      targetType: 'webhook_endpoint',
      targetId: claimed.endpointId,
      details: what === 'disabled' ? { owner_id: claimed.ownerId, reason, status_code: result.statusCode, outcome: result.outcome } : { owner_id: claimed.ownerId },
    });
  }

  onApplicationShutdown(): void {
    this.sender.close();
  }
}
