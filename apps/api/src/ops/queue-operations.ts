import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DomainError } from '#libs/errors';
import { RunsRepository, SessionControls, SessionsRepository } from '#libs/engine';
import { SessionDispatcher } from '#libs/queue';

/**
 * The ops CLI's `unpause` and `redispatch`: getting a session's queue moving again. The state
 * change goes through the engine's controls, with its events in the outbox, as a client's would.
 */
@Injectable()
export class QueueOperations {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly runs: RunsRepository,
    private readonly controls: SessionControls,
    private readonly dispatcher: SessionDispatcher,
  ) {}

  /** Resumes a paused queue (as a client's continue does: only once no turn is active) and nudges dispatch. */
  async unpause(sessionId: string): Promise<object> {
    await this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      if (!session) throw DomainError.notFound(`Session ${sessionId}`);
      await this.controls.continueQueue(manager, session);
    });
    const nudged = await this.dispatcher.nudge(sessionId).then(
      () => true,
      () => false,
    );
    return { session_id: sessionId, queue_paused: false, nudged };
  }

  /** Nudges the session's queue, and the takeover of a run that waits for a worker, if any. */
  async redispatch(sessionId: string): Promise<object> {
    if (!(await this.sessions.operatorView(sessionId))) throw DomainError.notFound(`Session ${sessionId}`);
    const awaiting = await this.runs.unleasedRunIds(sessionId);
    await this.dispatcher.nudge(sessionId);
    for (const runId of awaiting) await this.dispatcher.nudgeTakeover(sessionId, runId);
    return { session_id: sessionId, nudged: true, takeover_run_ids: awaiting };
  }
}
