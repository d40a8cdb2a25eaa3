import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import { isUuid, newId } from '#libs/database';
import { DomainError } from '#libs/errors';
import { AfterCommit, type Committed, type IdempotentResponse } from '#libs/engine';
import { metrics } from '#libs/metrics';
import { Acceptance } from '#libs/protocol';
import { StandaloneWebhooks, type WebhookChain } from '#libs/webhooks';
import type { AutomationRecord, InvocationReason, InvocationRecord, PauseReason } from '../automation.types.js';
import { automationView, invocationView } from './automation-view.js';
import { decideOverlap, goneReason, previousIsActive, principalOf, scheduledKey, turnToCancel } from './fire-decisions.js';
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

/** The fire's receipt: whose key, which scope, which request. */
interface FireReceipt {
  principal: Principal;
  scope: string;
  key: string;
  intent: unknown;
}

/** Thrown inside the fire's transaction when the scheduled time is no longer due: nothing is written. */
class StaleFire extends Error {}

/** The input's refusal before the transaction (a gone agent, an input the checks refuse). */
type Prepared = { input: PreparedInput } | { refused: DomainError };

/** The inner acceptance's savepoint: a refusal inside it (a gone session) undoes its writes, not the invocation's. */
const SAVEPOINT = 'automation_input';

/**
 * Fires an automation: one transaction records the invocation of the time (or of the run now)
 * and accepts its input through the protocol's acceptance (a session create or a follow-up
 * message, each with its own receipt, outbox events and nudges), under the automation's row lock.
 * A scheduled time is receipted under `automations.fire` and `<automation>:<time ms>` and is
 * unique per automation in its table: however many workers fire it, it is recorded once. Events,
 * nudges, webhook nudges and metrics go out after commit.
 */
@Injectable()
export class AutomationFirer {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly acceptance: Acceptance,
    private readonly targets: TargetInput,
    private readonly store: InvocationStore,
    private readonly webhooks: StandaloneWebhooks,
    private readonly afterCommit: AfterCommit,
  ) {}

  /**
   * Fires a scheduled time if it is still the automation's next one (status active, next_run_at =
   * scheduledAt), else `stale` with nothing written. A time already recorded (a replayed key) is
   * stale too: nothing more to do for it.
   */
  async fireScheduled(occurrence: ScheduledOccurrence): Promise<FireOutcome> {
    const automation = await this.store.read(this.dataSource.manager, occurrence.automationId);
    if (!automation || !isDue(automation, occurrence.scheduledAt)) return { kind: 'stale' };
    const principal = principalOf(automation.principal);
    const key = scheduledKey(automation.id, occurrence.scheduledAt);
    const receipt = { principal, scope: 'automations.fire', key, intent: { operation: 'automations.fire', automation_id: automation.id, scheduled_at: occurrence.scheduledAt.getTime() } };
    const fired = await this.fire(automation, receipt, { source: 'automation', scheduledAt: occurrence.scheduledAt, reason: occurrence.reason, next: occurrence.next });
    return fired.kind === 'recorded' ? { kind: 'recorded', invocation: fired.invocation } : { kind: 'stale' };
  }

  /** Run now (source manual, no scheduled time, next_run_at untouched) under the caller's Idempotency-Key; another owner's automation is 404. */
  async fireManual(principal: Principal, automationId: string, key: string): Promise<IdempotentResponse> {
    const notFound = DomainError.notFound(`Automation ${automationId}`);
    if (!isUuid(automationId)) throw notFound;
    const automation = await this.store.read(this.dataSource.manager, automationId);
    if (!automation || automation.ownerId !== principal.userId) throw notFound;
    const receipt = { principal, scope: `automations.invoke:${automationId}`, key, intent: { operation: 'automations.invoke', automation_id: automationId } };
    const fired = await this.fire(automation, receipt, { source: 'manual', ownerId: principal.userId });
    if (fired.kind === 'stale') throw notFound;
    return fired.response;
  }

  private async fire(seen: AutomationRecord, receipt: FireReceipt, fire: Fire): Promise<{ kind: 'stale' } | { kind: 'replayed'; response: IdempotentResponse } | { kind: 'recorded'; response: IdempotentResponse; invocation: InvocationRecord }> {
    const principal = principalOf(seen.principal);
    // cancel_previous: the previous turn asked to cancel first, in its own transaction (the fire's waits on no worker).
    const cancel = turnToCancel(seen.overlap, await this.store.previous(this.dataSource.manager, seen.id));
    if (cancel) await this.targets.cancelPrevious(principal, cancel.sessionId, cancel.turnId, `${receipt.scope}:${receipt.key}`);
    const prepared = await this.prepare(seen, principal);
    const invocationId = newId();
    let invocation: InvocationRecord | null = null;
    let committed: Committed | null = null;
    let chains: WebhookChain[] = [];
    let response: IdempotentResponse;
    try {
      response = await this.acceptance.accept(
        receipt.principal,
        receipt.scope,
        receipt.key,
        receipt.intent,
        async (manager) => {
          const locked = await this.store.lock(manager, seen.id);
          if (fire.source === 'automation' && (!locked || !isDue(locked.automation, fire.scheduledAt))) throw new StaleFire();
          if (!locked || (fire.source === 'manual' && locked.automation.ownerId !== fire.ownerId)) throw DomainError.notFound(`Automation ${seen.id}`);
          const done = await this.record(manager, locked.automation, locked.ownerSuspended, prepared, invocationId, fire);
          invocation = done.invocation;
          committed = done.committed;
          chains = done.chains;
          return { status: 201, body: invocationView(done.invocation), sessionId: null, receipt: null, events: [], nudges: [] };
        },
        'input' in prepared ? prepared.input.staging : undefined,
      );
    } catch (error) {
      if (error instanceof StaleFire) return { kind: 'stale' };
      throw error;
    }
    if (response.replayed || !invocation) return { kind: 'replayed', response };
    const recorded: InvocationRecord = invocation;
    // Not waited for: the response never waits on Redis (the relay, the recovery and webhook sweeps redo what is lost).
    if (committed) void this.afterCommit.send(committed);
    else if ('input' in prepared) void prepared.input.staging?.discard();
    void this.webhooks.nudge(chains);
    if (recorded.inputId !== null) metrics.inputAccepted('agent.session.input.message');
    const lag = recorded.scheduledAt && recorded.firedAt ? (recorded.firedAt.getTime() - recorded.scheduledAt.getTime()) / 1000 : null;
    metrics.automationInvocation(recorded.source, recorded.status, recorded.reason, lag);
    return { kind: 'recorded', response, invocation: recorded };
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
  private async record(
    manager: EntityManager,
    automation: AutomationRecord,
    ownerSuspended: boolean,
    prepared: Prepared,
    invocationId: string,
    fire: Fire,
  ): Promise<{ invocation: InvocationRecord; committed: Committed | null; chains: WebhookChain[] }> {
    const now = new Date();
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
      automationSnapshot: fire.source === 'automation' ? automationView(automation) : null,
      firedAt: null,
      createdAt: now,
    };
    let row: NewInvocation;
    let committed: Committed | null = null;
    let pause: PauseReason | null = null;
    const refusal = ownerSuspended ? new DomainError('user_suspended', 'The automation\'s owner is suspended') : 'refused' in prepared ? prepared.refused : null;
    if (refusal) {
      pause = goneReason(automation.target, refusal.code);
      row = failed(base, refusal, pause);
    } else {
      const input = (prepared as { input: PreparedInput }).input;
      const decision = decideOverlap(automation.overlap, previousIsActive(await this.store.previous(manager, automation.id)));
      if (!decision.fire) {
        row = { ...base, status: 'skipped', skipReason: decision.skipReason, reason: decision.reason };
      } else {
        await manager.query(`SAVEPOINT ${SAVEPOINT}`);
        try {
          const inner = await this.acceptance.within(manager, principalOf(automation.principal), input.scope, `automation-invocation:${invocationId}`, input.intent, (m) => input.work(m, decision.queuesBehind));
          await manager.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
          committed = inner.committed;
          const accepted = inner.result.receipt;
          const reason: InvocationReason = decision.reason ?? base.reason;
          row = { ...base, reason, sessionId: inner.result.sessionId, inputId: accepted?.input_id ?? null, turnId: accepted?.turn_id ?? null, firedAt: new Date() };
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          await manager.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
          pause = goneReason(automation.target, error.code);
          row = failed(base, error, pause);
        }
      }
    }
    const invocation = await this.store.insert(manager, row);
    if (pause) await this.store.pause(manager, automation.id, pause);
    else if (fire.source === 'automation') await this.store.advance(manager, automation.id, fire.next);
    const chains = invocation.status === 'failed' ? await this.announceFailure(manager, automation, invocation, pause) : [];
    return { invocation, committed, chains };
  }

  /** The failure's webhooks, in the fire's transaction: the invocation failed, and (a gone target) the automation paused. */
  private async announceFailure(manager: EntityManager, automation: AutomationRecord, invocation: InvocationRecord, pause: PauseReason | null): Promise<WebhookChain[]> {
    const data = { automation_id: automation.id, invocation_id: invocation.id, error_code: invocation.error?.code ?? 'unknown', ...(pause ? { pause_reason: pause } : {}) };
    const createdAt = Math.floor(invocation.createdAt.getTime() / 1000);
    const chains = await this.webhooks.write(manager, automation.ownerId, { id: eventId(), type: 'agent.automation.invocation.failed', created_at: createdAt, data });
    if (pause) chains.push(...(await this.webhooks.write(manager, automation.ownerId, { id: eventId(), type: 'yuxi.automation.paused', created_at: createdAt, data })));
    return chains;
  }
}

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
