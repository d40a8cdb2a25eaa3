import { Injectable } from '@nestjs/common';
import { EventOutbox, type FlushResult, type OutboxBatch } from '#libs/events';
import { AttachmentJobs, SessionDispatcher } from '#libs/queue';

/** What a committed transition asks of the worker side once its transaction is durable. */
export type Nudge =
  /** The session's queue may have something to claim. */
  | { kind: 'queue' }
  /** A run waits for a worker to take it over. */
  | { kind: 'takeover'; runId: string }
  /** An input's attachments wait for a worker to prepare them. */
  | { kind: 'prepare'; inputId: string };

/** A committed transition's effects outside Postgres: its outbox batch and its nudges. */
export interface Committed {
  batch: OutboxBatch;
  nudges: readonly Nudge[];
}

/**
 * The one after-commit path (Vendure's "events only after commit"): publishes a committed batch,
 * then sends its nudges. Called only once the transaction committed; it never throws, and nothing
 * it fails to do is lost — the outbox relay publishes what the stream lacks (and nudges for the
 * inputs it announces), the recovery sweep re-nudges idle queues, takeovers and preparations.
 * A preparation is queued first: the input it concerns cannot run before it anyway.
 */
@Injectable()
export class AfterCommit {
  constructor(
    private readonly outbox: EventOutbox,
    private readonly dispatcher: SessionDispatcher,
    private readonly attachmentJobs: AttachmentJobs,
  ) {}

  async send({ batch, nudges }: Committed): Promise<FlushResult> {
    const { sessionId } = batch;
    for (const nudge of nudges) if (nudge.kind === 'prepare') await this.attachmentJobs.prepareQuietly(nudge.inputId);
    const published = await this.outbox.flush(sessionId, batch);
    for (const nudge of nudges) {
      if (nudge.kind === 'queue') await this.dispatcher.nudgeQuietly(sessionId);
      if (nudge.kind === 'takeover') await this.dispatcher.nudgeTakeover(sessionId, nudge.runId).catch(() => undefined);
    }
    return published;
  }
}
