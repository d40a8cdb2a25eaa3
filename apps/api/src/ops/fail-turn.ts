import { hostname } from 'node:os';
import { Injectable } from '@nestjs/common';
import { isUuid } from '#libs/database';
import { DomainError } from '#libs/errors';
import { EventPublisher } from '#libs/events';
import { AfterCommit, RunRecovery, SessionsRepository } from '#libs/engine';
import { RunSignals } from '#libs/queue';

/**
 * The ops CLI's `fail-turn`: ending a stuck turn without SQL. The state change goes through the
 * engine's recovery, with its events in the outbox, as a worker's would.
 */
@Injectable()
export class FailTurn {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly recovery: RunRecovery,
    private readonly publisher: EventPublisher,
    private readonly afterCommit: AfterCommit,
    private readonly signals: RunSignals,
  ) {}

  /**
   * Ends an active turn failed with `operator_failed`. The run's lease is taken from its worker under
   * a new fencing epoch (its writes are refused from then on), the stream's fence is raised (its
   * live deltas too), the worker is told to stop, and the run and turn end failed with what clients
   * saw kept as an incomplete item; `agent.session.turn.failed` goes out through the outbox. Inputs
   * waiting behind the turn are paused, as behind any failed turn (`unpause` resumes them).
   */
  async execute(turnId: string, reason: string | undefined): Promise<object> {
    if (!isUuid(turnId)) throw DomainError.notFound(`Turn ${turnId}`);
    const owner = `operator:${hostname()}:${process.pid}`;
    const seized = await this.recovery.seize(turnId, owner);
    const { sessionId } = seized.turn;
    const fenced = await this.publisher.raiseFence(sessionId, seized.lease.epoch).then(
      () => true,
      () => false,
    );
    await this.signals.requestCancel(seized.run.id).catch(() => undefined);
    // Read after the fence: nothing the old worker streams from now on reaches clients. Unknown
    // (Redis down): clients are told to resync, and the run's checkpoint stands in.
    const shown = fenced ? await this.publisher.shownText(sessionId, seized.run.id).catch(() => null) : null;
    const message = reason ? `The turn was failed by an operator: ${reason}` : 'The turn was failed by an operator';
    const settled = await this.recovery.failSeized(seized, shown, { code: 'operator_failed', message });
    if (!settled) throw new DomainError('state_conflict', `Run ${seized.run.id} could not be failed in time (its operator lease expired); run fail-turn again`);
    const published = (await this.afterCommit.send(settled)).complete;
    const after = await this.sessions.operatorView(sessionId);
    return {
      session_id: sessionId,
      turn_id: settled.turn.id,
      run_id: seized.run.id,
      previous_lease_owner: seized.previousOwner,
      status: settled.turn.status,
      error: settled.turn.error,
      // false: Redis was unreachable; the outbox relay publishes the events once it is back.
      events_published: published,
      queue_paused: after?.queue_paused ?? null,
    };
  }
}
