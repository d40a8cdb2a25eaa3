import { hostname } from 'node:os';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { isUuid } from '#libs/database';
import { DomainError } from '#libs/errors';
import { EventPublisher } from '#libs/events';
import { AfterCommit, InputsRepository, RunRecovery, RunsRepository, SessionControls, SessionsRepository, TurnsRepository } from '#libs/engine';
import { RunSignals, SessionDispatcher } from '#libs/queue';

/** How many of a session's latest turns `session` shows. */
const TURNS_SHOWN = 20;

/**
 * What an on-call operator needs without SQL (the ops CLI): a session's queue, turns, runs and
 * leases; resuming a paused queue; failing a stuck turn; nudging dispatch. Every state change goes
 * through the lifecycle transitions, with its events in the outbox, as a client's or a worker's
 * would.
 */
@Injectable()
export class Operations {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly controls: SessionControls,
    private readonly recovery: RunRecovery,
    private readonly publisher: EventPublisher,
    private readonly afterCommit: AfterCommit,
    private readonly dispatcher: SessionDispatcher,
    private readonly signals: RunSignals,
  ) {}

  /** The session, its pending inputs in claim order, its latest turns with their runs and leases (times on the database clock). */
  async session(sessionId: string): Promise<object> {
    const session = await this.sessions.operatorView(sessionId);
    if (!session) throw DomainError.notFound(`Session ${sessionId}`);
    const pending = await this.inputs.pendingSummary(sessionId);
    const turns = await this.turns.operatorSummaries(sessionId, TURNS_SHOWN);
    const runs = await this.runs.operatorSummaries(turns.map((turn) => String(turn.id)));
    const { db_now: dbNow, ...fields } = session;
    return {
      db_now: dbNow,
      session: fields,
      queue: { paused: session.queue_paused, pending },
      turns: turns.reverse().map((turn) => ({
        ...turn,
        runs: runs.filter((run) => run.turn_id === turn.id).map((run) => ({ ...run, turn_id: undefined })),
      })),
    };
  }

  /** Resumes a paused queue (as a client's continue does: only once no turn is active) and nudges dispatch. */
  async unpause(sessionId: string): Promise<object> {
    await this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      if (!session) throw DomainError.notFound(`Session ${sessionId}`);
      await this.controls.continueQueue(manager, session);
    });
    const nudged = await this.nudge(sessionId);
    return { session_id: sessionId, queue_paused: false, nudged };
  }

  /**
   * Ends an active turn failed with `operator_failed`. The run's lease is taken from its worker under
   * a new fencing epoch (its writes are refused from then on), the stream's fence is raised (its
   * live deltas too), the worker is told to stop, and the run and turn end failed with what clients
   * saw kept as an incomplete item; `agent.session.turn.failed` goes out through the outbox. Inputs
   * waiting behind the turn are paused, as behind any failed turn (`unpause` resumes them).
   */
  async failTurn(turnId: string, reason: string | undefined): Promise<object> {
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

  /** Nudges the session's queue, and the takeover of a run that waits for a worker, if any. */
  async redispatch(sessionId: string): Promise<object> {
    if (!(await this.sessions.operatorView(sessionId))) throw DomainError.notFound(`Session ${sessionId}`);
    const awaiting = await this.runs.unleasedRunIds(sessionId);
    await this.dispatcher.nudge(sessionId);
    for (const runId of awaiting) await this.dispatcher.nudgeTakeover(sessionId, runId);
    return { session_id: sessionId, nudged: true, takeover_run_ids: awaiting };
  }

  private async nudge(sessionId: string): Promise<boolean> {
    return this.dispatcher.nudge(sessionId).then(
      () => true,
      () => false,
    );
  }
}
