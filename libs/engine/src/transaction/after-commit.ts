import { Injectable } from '@nestjs/common';
import { EventOutbox, type FlushResult, type OutboxBatch } from '#libs/events';
import { InputsRepository } from '../tables/inputs.repository.js';
import { AttachmentJobs, RunSignals, SessionDispatcher, WebhookJobs } from '#libs/queue';
import { ACTIVE_TURN_STATUSES } from '../machines/turn-states.js';
import { WEBHOOK_FAN_OUT } from '#libs/webhooks';
import { CooperationWaits } from '../cooperation/cooperation-waits.js';

/**
 * Sessions of an account at its cap nudged when one of its turns ends: a few, as one slot freed
 * (the first to claim takes it, the others are refused and wait); the sweep finds the rest.
 */
const ACCOUNT_NUDGES = 4;

/** What a committed transition asks of the worker side once its transaction is durable. */
export type Nudge =
  /** The session's queue (or another session's, named) may have something to claim. */
  | { kind: 'queue'; sessionId?: string }
  /** A run was asked to cancel: its worker stops it at the next boundary. */
  | { kind: 'cancel'; runId: string }
  /** A steer was queued behind the session's running turn: its worker looks for it at the next boundary. */
  | { kind: 'steer' }
  /** A member's turn ended: its parent gets the signal (and a waiting coordinator may continue). */
  | { kind: 'cooperation'; parentSessionId: string }
  /** A member freed a slot of its tree's cap: the tree's queued members may claim. */
  | { kind: 'tree'; rootSessionId: string }
  /** A turn of an account (product user) at its cap of running turns ended: the account's waiting sessions may claim. */
  | { kind: 'account'; accountId: string }
  /** A run waits for a worker to take it over. */
  | { kind: 'takeover'; runId: string }
  /** An input's attachments wait for a worker to prepare them. */
  | { kind: 'prepare'; inputId: string };

/** A committed transition's effects outside Postgres: its outbox batch and its nudges. */
export interface Committed {
  batch: OutboxBatch;
  nudges: readonly Nudge[];
  /** What the same transaction committed on other sessions (a coordinator's step on its members), sent after this. */
  also?: readonly Committed[];
}

/**
 * The one after-commit path (Vendure's "events only after commit"): publishes a committed batch,
 * then sends its nudges. Called only once the transaction committed; it never throws, and nothing
 * it fails to do is lost — the outbox relay publishes what the stream lacks (and nudges for the
 * inputs it announces), the recovery sweep re-nudges idle queues, takeovers and preparations.
 * A preparation is queued first: the input it concerns cannot run before it anyway. A member's
 * ended turn is delivered to its parent last (the recovery sweep delivers what is left undelivered).
 */
@Injectable()
export class AfterCommit {
  constructor(
    private readonly outbox: EventOutbox,
    private readonly dispatcher: SessionDispatcher,
    private readonly attachmentJobs: AttachmentJobs,
    private readonly signals: RunSignals,
    private readonly cooperation: CooperationWaits,
    private readonly webhookJobs: WebhookJobs,
    private readonly inputs: InputsRepository,
  ) {}

  async send({ batch, nudges, also }: Committed): Promise<FlushResult> {
    const { sessionId } = batch;
    for (const nudge of nudges) if (nudge.kind === 'prepare') await this.attachmentJobs.prepareQuietly(nudge.inputId);
    const published = await this.outbox.flush(sessionId, batch);
    // The batch wrote webhook deliveries (its chain is the session): a worker attempts them now.
    const endpoints = batch.fanOut?.[WEBHOOK_FAN_OUT];
    if (endpoints) await this.webhookJobs.nudgeQuietly(endpoints.map((endpointId) => ({ endpointId, chain: sessionId })));
    for (const nudge of nudges) {
      if (nudge.kind === 'queue') await this.dispatcher.nudgeQuietly(nudge.sessionId ?? sessionId);
      if (nudge.kind === 'takeover') await this.dispatcher.nudgeTakeover(sessionId, nudge.runId).catch(() => undefined);
      if (nudge.kind === 'cancel') await this.signals.requestCancel(nudge.runId).catch(() => undefined);
      if (nudge.kind === 'steer') await this.signals.announceSteer(sessionId).catch(() => undefined);
    }
    for (const other of also ?? []) await this.send(other);
    // Last: a delivery is a transaction of its own (under the parent's lock), then sent like any.
    for (const nudge of nudges) {
      if (nudge.kind === 'cooperation') {
        const delivered = await this.cooperation.deliver(nudge.parentSessionId).catch(() => null);
        if (delivered) await this.send(delivered);
      }
      if (nudge.kind === 'account') for (const waiting of await this.inputs.accountSessionsWithWaitingInputs(nudge.accountId, ACCOUNT_NUDGES, ACTIVE_TURN_STATUSES).catch(() => [])) await this.dispatcher.nudgeQuietly(waiting);
      if (nudge.kind === 'tree') for (const member of await this.cooperation.queuedMembers(nudge.rootSessionId).catch(() => [])) await this.dispatcher.nudgeQueuedMember(member);
    }
    return published;
  }
}
