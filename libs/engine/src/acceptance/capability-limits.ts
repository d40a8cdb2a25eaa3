import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { type CapabilityLimitReason, EventOutbox, type OutboxBatch } from '#libs/events';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { type Lease } from '../claims/lease.js';
import { RunsRepository } from '../tables/runs.repository.js';
import type { HeldTurn } from '../claims/held-turn.js';
import { turnEvents } from '../steps/turn-events.js';

const TYPE = 'yuxi.session.turn.capability_limited';

/**
 * A turn that goes on without some of its capabilities (a tool source that cannot be reached)
 * says so once: one durable event per turn and reason. Every run of the turn finds the limitation
 * again when it plans its tools (a yield, a resume, a takeover); the outbox itself is the record
 * that the event was sent, so none of them sends it twice, and no other table keeps a flag.
 * (A turn resumed after the replay window, when the first event's row may be pruned, says it again:
 * no client can replay the first one by then.)
 */
@Injectable()
export class CapabilityLimits {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly runs: RunsRepository,
    private readonly outbox: EventOutbox,
  ) {}

  /** The batch to publish (empty when the turn already announced this reason); null when the lease is gone. */
  async announce(held: HeldTurn, lease: Lease, reason: CapabilityLimitReason): Promise<OutboxBatch | null> {
    const { sessionId, id: turnId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      // The session lock orders this check against any other writer of the session's outbox.
      await this.sessions.lock(manager, sessionId);
      if (!(await this.runs.lockHeldRun(manager, lease))) return null;
      if (await this.outbox.hasEvent(manager, sessionId, TYPE, { turn_id: turnId, reason })) return { sessionId, rows: [] };
      return this.outbox.append(manager, sessionId, [turnEvents.capabilityLimited(turnId, lease.runId, reason)], { epoch: lease.epoch });
    });
  }
}
