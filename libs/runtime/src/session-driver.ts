import { Injectable, Logger } from '@nestjs/common';
import { withLogContext } from '#libs/config';
import { newId } from '#libs/database';
import { RunSignals } from '#libs/queue';
import { RunsRepository, TurnClaims } from '#libs/engine';
import { LeaseKeeper } from './lease-keeper.js';
import { RunControl } from './run-control.js';
import { ShuttingDownError } from './run-errors.js';
import { RunExecutor } from './run-executor.js';
import { WORKER_ID } from './worker-identity.js';

/**
 * Drives one session for one dispatch job: takes its next work (a run waiting to be taken over, or
 * the queue head) and executes it, until nothing is left or this worker stops claiming. Whether
 * this worker may drive the session is decided in Postgres (the session lock, the turns table and
 * the run's lease), never by the job.
 */
@Injectable()
export class SessionDriver {
  private readonly logger = new Logger(SessionDriver.name);
  private claiming = true;
  private readonly inFlight = new Set<AbortController>();

  constructor(
    private readonly claims: TurnClaims,
    private readonly executor: RunExecutor,
    private readonly runs: RunsRepository,
    private readonly signals: RunSignals,
  ) {}

  /**
   * `takeover`: the nudge says a run waits to be taken over (else only pending inputs are looked for).
   * `readyInputId`: the nudge of an input whose attachments became ready; once this dispatch has
   * claimed all it could, a line says how many turns it ran. Anything the readiness could start
   * is claimed before that line, so it is where an observer knows a ready input started no run
   * (a cancelled input's late preparation, for one).
   */
  async drive(sessionId: string, takeover = false, readyInputId?: string): Promise<number> {
    let turnsRun = 0;
    // What the last settle saw of the queue under the session lock; null: unknown, the claim looks
    // (its read under the lock answers whether there is anything to take, so no look before it).
    // An input that lands after a settle comes with its own nudge: the session's dedup keeps one
    // while this job runs.
    let pendingKnown: number | null = null;
    while (this.claiming && (pendingKnown === null || pendingKnown > 0 || (takeover && (await this.runs.hasUnleasedRun(sessionId))))) {
      // Listening for a cancel starts before the claim commits, so none can slip in between.
      const runId = newId();
      const control = new RunControl();
      await control.listen(this.signals, runId).catch(() => undefined);
      this.inFlight.add(control.abort);
      try {
        const sentAt = LeaseKeeper.now();
        const held = await this.claims.claim(sessionId, runId, WORKER_ID);
        if (!held) break;
        if (held.run.id !== runId) await control.listen(this.signals, held.run.id).catch(() => undefined);
        if (!this.claiming) control.abort.abort(new ShuttingDownError());
        // Every line logged about this run carries its ids.
        pendingKnown = await withLogContext({ session_id: sessionId, turn_id: held.turn.id, run_id: held.run.id }, () => this.executor.execute(held, control, sentAt));
        turnsRun += 1;
      } finally {
        control.stopListening();
        this.inFlight.delete(control.abort);
      }
    }
    if (readyInputId !== undefined) {
      withLogContext({ session_id: sessionId }, () => this.logger.log(`input ${readyInputId}: attachments ready; its dispatch ran ${turnsRun} turn(s)`));
    }
    return turnsRun;
  }

  /** False once the worker shuts down: a pass started now would claim nothing. */
  get isClaiming(): boolean {
    return this.claiming;
  }

  /** Shutdown: claim nothing more, and bring every run in flight to its next boundary to release it. */
  stopClaiming(): void {
    this.claiming = false;
    for (const abort of this.inFlight) abort.abort(new ShuttingDownError());
  }
}
