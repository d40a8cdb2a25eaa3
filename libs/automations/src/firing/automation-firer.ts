import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import { isUuid, newId } from '#libs/database';
import { DomainError } from '#libs/errors';
import { AfterCommit, type Committed, IdempotencyService, type IdempotentResponse } from '#libs/engine';
import { metrics } from '#libs/metrics';
import { Acceptance } from '#libs/protocol';
import { inSpan, SESSION_ATTRIBUTE, tracingOn } from '#libs/telemetry';
import { StandaloneWebhooks, type WebhookChain } from '#libs/webhooks';
import type { AutomationRecord, InvocationReason, InvocationRecord, PauseReason } from '../automation.types.js';
import { toAutomationSnapshot, toInvocationDto as invocationView } from '../views/automation-view.js';
import { deadPrincipal, decideOverlap, goneReason, previousIsActive, principalOf, scheduledKey, turnToCancel } from './fire-decisions.js';
import { type NewInvocation, InvocationStore } from './invocation-store.js';
import { type PreparedInput, TargetInput } from './target-input.js';

/** One scheduled time to fire, as the scheduler planned it. */
export interface ScheduledOccurrence {
  automationId: string;
  scheduledAt: Date;
  reason: 'scheduled' | 'catch_up';
  /** What next_run_at becomes (null: a once automation completes). */
  next: Date | null;
}

export type FireOutcome = { kind: 'stale' } | { kind: 'recorded'; invocation: InvocationRecord };

/** What kind of fire: a scheduled time (it moves next_run_at on) or run now. */
type Fire = { source: 'automation'; scheduledAt: Date; reason: 'scheduled' | 'catch_up'; next: Date | null } | { source: 'manual'; ownerId: string };

/** Run now's receipt: the caller's key and scope (`looked`: the key was read and answered nothing). */
interface FireReceipt {
  principal: Principal;
  scope: string;
  key: string;
  intent: unknown;
  looked: boolean;
}

/** The automation as the fire read it before its transaction. */
type Seen = NonNullable<Awaited<ReturnType<InvocationStore['read']>>>;

type Fired = { kind: 'stale' } | { kind: 'changed' } | { kind: 'replayed'; response: IdempotentResponse } | { kind: 'recorded'; response: IdempotentResponse | null; invocation: InvocationRecord };

/** Thrown inside the fire's transaction when the scheduled time is no longer due: nothing is written. */
class StaleFire extends Error {}

/** Thrown inside the fire's transaction when the automation changed since its input was prepared (a new target): prepared again. */
class ChangedFire extends Error {}

/** The input's refusal before the transaction (a gone agent, an input the checks refuse). */
type Prepared = { input: PreparedInput } | { refused: DomainError };

/** The inner acceptance's savepoint: a refusal inside it (a gone session) undoes its writes, not the invocation's. */
const SAVEPOINT = 'automation_input';

/** A fire whose automation changed between its preparation and its lock is prepared again, this many times in all. */
const ATTEMPTS = 2;

/**
 * Fires an automation: one transaction records the invocation of the time (or of the run now)
 * and accepts its input through the protocol's acceptance (a session create or a follow-up
 * message, each with its own receipt, outbox events and nudges), under the automation's row lock,
 * as its creator is now (their role; a suspended user or a revoked or expired key fails the fire
 * and pauses the automation). A scheduled time is guarded by that lock, next_run_at and the
 * invocation's uniqueness per automation and time: however many workers fire it, it is recorded
 * once. Run now is receipted under the caller's Idempotency-Key, looked up before anything else.
 * Events, nudges, webhook nudges and metrics go out after commit.
 */
@Injectable()
export class AutomationFirer {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly acceptance: Acceptance,
    private readonly idempotency: IdempotencyService,
    private readonly targets: TargetInput,
    private readonly store: InvocationStore,
    private readonly webhooks: StandaloneWebhooks,
    private readonly afterCommit: AfterCommit,
  ) {}

  /**
   * Fires a scheduled time if it is still the automation's next one (status active, next_run_at =
   * scheduledAt), else `stale` with nothing written (a time another worker recorded is stale too).
   */
  async fireScheduled(occurrence: ScheduledOccurrence): Promise<FireOutcome> {
    const fire: Fire = { source: 'automation', scheduledAt: occurrence.scheduledAt, reason: occurrence.reason, next: occurrence.next };
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const seen = await this.store.read(this.dataSource.manager, occurrence.automationId);
      if (!seen || !isDue(seen.automation, occurrence.scheduledAt)) return { kind: 'stale' };
      const fired = await this.fire(seen, fire, null);
      if (fired.kind === 'recorded') return { kind: 'recorded', invocation: fired.invocation };
      if (fired.kind !== 'changed') return { kind: 'stale' };
    }
    // Changed again: the time stays due, for the sweep's next pass.
    return { kind: 'stale' };
  }

  /** Run now (source manual, no scheduled time, next_run_at untouched) under the caller's Idempotency-Key; another owner's automation is 404. */
  async fireManual(principal: Principal, automationId: string, key: string): Promise<IdempotentResponse> {
    const notFound = DomainError.notFound(`Automation ${automationId}`);
    if (!isUuid(automationId)) throw notFound;
    const scope = `automations.invoke:${automationId}`;
    const intent = { operation: 'automations.invoke', automation_id: automationId };
    // The key first: a retry answers what the first request did (even once the automation is deleted), and prepares, cancels and fires nothing.
    const receiptScope = Acceptance.scopeOf(principal, scope, key, intent);
    const row = await this.idempotency.lookup(receiptScope);
    const replay = IdempotencyService.decide(row, receiptScope);
    if (replay) return replay;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const seen = await this.store.read(this.dataSource.manager, automationId);
      if (!seen || seen.automation.ownerId !== principal.userId) throw notFound;
      const fired = await this.fire(seen, { source: 'manual', ownerId: principal.userId }, { principal, scope, key, intent, looked: row === null });
      if (fired.kind === 'stale') throw notFound;
      // Run now always answers through its receipt (a response, first or replayed).
      if (fired.kind !== 'changed') return fired.response!;
    }
    throw new DomainError('state_conflict', 'The automation changed while it was being run; try again');
  }

  /**
   * One fire, in an `automation.fire` span while tracing is on: a timer's fire starts a trace (run
   * now joins its request's), and the input it accepts stores that span's context, so the turn the
   * fire starts is in its trace.
   */
  private fire(seen: Seen, fire: Fire, receipt: FireReceipt | null): Promise<Fired> {
    if (!tracingOn()) return this.fireOnce(seen, fire, receipt);
    const attributes = { 'yuxi.automation.id': seen.automation.id, 'yuxi.automation.source': fire.source, ...(fire.source === 'automation' ? { 'yuxi.automation.scheduled_at': fire.scheduledAt.toISOString() } : {}) };
    return inSpan('automation.fire', { attributes }, async (span) => {
      const fired = await this.fireOnce(seen, fire, receipt);
      span?.setAttribute('yuxi.automation.outcome', fired.kind);
      if (fired.kind === 'recorded') {
        span?.setAttributes({ 'yuxi.automation.invocation_id': fired.invocation.id, 'yuxi.automation.invocation_status': fired.invocation.status });
        // Kept with the session's spans (the span store keeps spans naming a session).
        if (fired.invocation.sessionId) span?.setAttribute(SESSION_ATTRIBUTE, fired.invocation.sessionId);
      }
      return fired;
    });
  }

  private async fireOnce(seen: Seen, fire: Fire, receipt: FireReceipt | null): Promise<Fired> {
    const automation = seen.automation;
    const dead = deadPrincipal(seen.live);
    const principal = principalOf(automation.principal, seen.live);
    // cancel_previous: the previous turn asked to cancel first, in its own transaction (the fire's waits on no worker).
    // Only an invocation committed before this fire began counts: a duplicate fire of this time never cancels the winner's turn.
    const fireKey = fire.source === 'automation' ? `automations.fire:${scheduledKey(automation.id, fire.scheduledAt)}` : `${receipt?.scope}:${receipt?.key}`;
    const before = { at: seen.readAt, scheduledAt: fire.source === 'automation' ? fire.scheduledAt : null };
    const cancel = !dead && automation.overlap === 'cancel_previous' ? turnToCancel(await this.store.previous(this.dataSource.manager, automation.id, before)) : null;
    if (cancel) await this.targets.cancelPrevious(principal, cancel.sessionId, cancel.turnId, fireKey);
    // The fire's reason says so even when the cancelled turn has ended by the time the fire locks the automation.
    const cancelled = cancel !== null;
    const prepared: Prepared = dead ? { refused: new DomainError(dead.code, dead.message) } : await this.prepare(automation, principal);
    const staging = 'input' in prepared ? prepared.input.staging : undefined;
    const invocationId = newId();
    let done: Recorded | null = null;
    const work = async (manager: EntityManager): Promise<Recorded> => {
      const locked = await this.store.lock(manager, automation.id);
      if (fire.source === 'automation' && (!locked || !isDue(locked.automation, fire.scheduledAt))) throw new StaleFire();
      if (!locked || (fire.source === 'manual' && locked.automation.ownerId !== fire.ownerId)) throw DomainError.notFound(`Automation ${automation.id}`);
      // A target updated since the input was prepared: that input is the old target's, so prepare again.
      if (locked.automation.updatedAt.getTime() !== automation.updatedAt.getTime()) throw new ChangedFire();
      done = await this.record(manager, locked, prepared, invocationId, fire, cancelled);
      return done;
    };
    let response: IdempotentResponse | null = null;
    try {
      if (receipt) {
        response = await this.acceptance.accept(
          receipt.principal,
          receipt.scope,
          receipt.key,
          receipt.intent,
          async (manager) => ({ status: 201, body: invocationView((await work(manager)).invocation), sessionId: null, receipt: null, events: [], nudges: [] }),
          staging,
          receipt.looked,
        );
      } else {
        // A scheduled time: a plain transaction (the lock, next_run_at and the time's uniqueness guard it; the input keeps its own receipt).
        await staging?.stage();
        await this.dataSource.transaction(work);
      }
    } catch (error) {
      if (!receipt) await staging?.discard();
      if (error instanceof StaleFire) return { kind: 'stale' };
      if (error instanceof ChangedFire) return { kind: 'changed' };
      throw error;
    }
    const recorded = done as Recorded | null;
    if (!recorded || response?.replayed) return { kind: 'replayed', response: response! };
    // Not waited for: the response never waits on Redis (the relay, the recovery and webhook sweeps redo what is lost).
    if (recorded.committed) void this.afterCommit.send(recorded.committed);
    else void staging?.discard();
    void this.webhooks.nudge(recorded.chains);
    const invocation = recorded.invocation;
    if (invocation.inputId !== null) metrics.inputAccepted('agent.session.input.message');
    const lag = invocation.scheduledAt && invocation.firedAt ? (invocation.firedAt.getTime() - invocation.scheduledAt.getTime()) / 1000 : null;
    metrics.automationInvocation(invocation.source, invocation.status, invocation.reason, lag);
    return { kind: 'recorded', response, invocation };
  }

  /** The input checked as the automation's principal, before the transaction; a refusal is recorded by it. */
  private async prepare(automation: AutomationRecord, principal: Principal): Promise<Prepared> {
    try {
      return { input: await this.targets.prepare(automation, principal) };
    } catch (error) {
      if (error instanceof DomainError) return { refused: error };
      throw error;
    }
  }

  /** Under the automation's lock: the overlap decided, the input accepted (or the failure recorded), the invocation inserted, the automation moved on or paused. */
  private async record(manager: EntityManager, locked: Locked, prepared: Prepared, invocationId: string, fire: Fire, cancelledPrevious: boolean): Promise<Recorded> {
    const automation = locked.automation;
    const base: NewInvocation = {
      id: invocationId,
      automation,
      source: fire.source,
      scheduledAt: fire.source === 'automation' ? fire.scheduledAt : null,
      status: 'completed',
      skipReason: null,
      reason: fire.source === 'automation' ? fire.reason : 'manual',
      error: null,
      sessionId: null,
      inputId: null,
      turnId: null,
      automationSnapshot: fire.source === 'automation' ? toAutomationSnapshot(automation) : null,
      fired: false,
    };
    let row: NewInvocation;
    let committed: Committed | null = null;
    let pause: PauseReason | null = null;
    // The creator as they are under the lock: a suspension or a revoked key since the preparation counts.
    const dead = deadPrincipal(locked.live);
    const refusal = dead ? new DomainError(dead.code, dead.message) : 'refused' in prepared ? prepared.refused : null;
    if (refusal) {
      pause = goneReason(automation.target, refusal);
      row = failed(base, refusal, pause);
    } else {
      const input = (prepared as { input: PreparedInput }).input;
      const context = { targetType: automation.target.type, once: automation.type === 'once' };
      const decision = decideOverlap(automation.overlap, previousIsActive(await this.store.previous(manager, automation.id)), context);
      if (!decision.fire) {
        row = { ...base, status: 'skipped', skipReason: decision.skipReason, reason: decision.reason };
      } else {
        await manager.query(`SAVEPOINT ${SAVEPOINT}`);
        try {
          const inner = await this.acceptance.within(manager, principalOf(automation.principal, locked.live), input.scope, `automation-invocation:${invocationId}`, input.intent, (m) => input.work(m, decision.queuesBehind));
          await manager.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
          committed = inner.committed;
          const accepted = inner.result.receipt;
          row = { ...base, reason: firedReason(base.reason, decision.reason, cancelledPrevious), sessionId: inner.result.sessionId, inputId: accepted?.input_id ?? null, turnId: accepted?.turn_id ?? null, fired: true };
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          await manager.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
          pause = goneReason(automation.target, error);
          row = failed(base, error, pause);
        }
      }
    }
    const invocation = await this.store.insert(manager, row);
    const paused = pause !== null && (await this.store.pause(manager, automation.id, pause));
    if (!pause && fire.source === 'automation') await this.store.advance(manager, automation.id, fire.next);
    const chains = invocation.status === 'failed' ? await this.announceFailure(manager, automation, invocation, pause, paused) : [];
    return { invocation, committed, chains };
  }

  /** The failure's webhooks, in the fire's transaction: the invocation failed, and (a gone target) the automation paused. */
  private async announceFailure(manager: EntityManager, automation: AutomationRecord, invocation: InvocationRecord, pause: PauseReason | null, paused: boolean): Promise<WebhookChain[]> {
    const data = { automation_id: automation.id, invocation_id: invocation.id, error_code: invocation.error?.code ?? 'unknown', ...(pause ? { pause_reason: pause } : {}) };
    const createdAt = Math.floor(invocation.createdAt.getTime() / 1000);
    const chains = await this.webhooks.write(manager, automation.ownerId, { id: eventId(), type: 'agent.automation.invocation.failed', created_at: createdAt, data });
    if (paused) chains.push(...(await this.webhooks.write(manager, automation.ownerId, { id: eventId(), type: 'yuxi.automation.paused', created_at: createdAt, data })));
    return chains;
  }
}

type Locked = NonNullable<Awaited<ReturnType<InvocationStore['lock']>>>;

/** What the fire's transaction recorded, and what goes out after it commits. */
interface Recorded {
  invocation: InvocationRecord;
  committed: Committed | null;
  chains: WebhookChain[];
}

/**
 * A fired invocation's reason: a late time keeps saying it was late (catch_up) rather than that
 * it queued; a cancelled previous turn is said (it acted on another turn), else the fire's own.
 */
function firedReason(own: InvocationReason, overlap: OverlapDecisionReason, cancelledPrevious: boolean): InvocationReason {
  if (overlap === 'overlap_queued' && own === 'catch_up') return own;
  return overlap ?? (cancelledPrevious ? 'overlap_cancelled_previous' : own);
}

type OverlapDecisionReason = 'overlap_queued' | 'overlap_cancelled_previous' | null;

/** The scheduled time is still the automation's next one to fire. */
function isDue(automation: AutomationRecord, scheduledAt: Date): boolean {
  return automation.status === 'active' && automation.nextRunAt?.getTime() === scheduledAt.getTime();
}

function failed(base: NewInvocation, error: DomainError, pause: PauseReason | null): NewInvocation {
  return { ...base, status: 'failed', reason: pause ? 'target_unavailable' : 'rejected', error: { code: error.code, message: error.message } };
}

function eventId(): string {
  return `evt_${newId().replaceAll('-', '')}`;
}
