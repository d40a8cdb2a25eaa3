import { Injectable } from '@nestjs/common';
import { DomainError } from '#libs/errors';
import { InputsRepository, RunsRepository, SessionsRepository, TurnsRepository } from '#libs/engine';

/** How many of a session's latest turns `session` shows. */
const TURNS_SHOWN = 20;

/** The ops CLI's `session`: what an on-call operator reads instead of SQL. It reads only. */
@Injectable()
export class SessionInspection {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
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
}
