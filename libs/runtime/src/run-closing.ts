import { Injectable, Logger } from '@nestjs/common';
import { setLogContext } from '#libs/config';
import { newId } from '#libs/database';
import { isDependencyUnavailable } from '#libs/errors';
import { type Outcome, RunEndings, TurnSettlement } from '#libs/lifecycle';
import { metrics } from '#libs/metrics';
import { ModelError } from '#libs/models';
import { RunSignals } from '#libs/queue';
import type { PublicError } from '#libs/turns';
import { DurableWrites, RUN_LOG_CONTEXT } from './durable-writes.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { RunControl } from './run-control.js';
import { LeaseLostError, ShuttingDownError, TurnCancelledError, TurnLimitError } from './run-errors.js';
import { emptyOutput, type RunState } from './run-scope.js';

/**
 * How a held run ends, or hands over to the next run of its turn: settled (completed, failed,
 * cancelled), released at shutdown for another worker, or yielded to the steers that arrived. What
 * stopped the run decides which: a cancel settles it cancelled, a shutdown releases it, a lost
 * lease stops it without another write, a model error or a limit fails it.
 */
@Injectable()
export class RunClosing {
  private readonly logger = new Logger(RUN_LOG_CONTEXT);

  constructor(
    private readonly endings: RunEndings,
    private readonly settlement: TurnSettlement,
    private readonly writes: DurableWrites,
    private readonly signals: RunSignals,
  ) {}

  /**
   * Commits the outcome, retrying while the database is unreachable: the lease (on the database
   * clock) bounds the retries, and once it is gone recovery continues the turn elsewhere.
   */
  async settle(state: RunState, outcome: Outcome): Promise<void> {
    const { held, lease } = state;
    // Its events are published and its nudges sent by the settle itself, once committed.
    const settled = await this.writes.retrying(lease, () => this.settlement.settle(held, lease, state.output, { ...outcome, context: state.context.current }));
    if (settled === undefined) return;
    if (!settled) return this.writes.fenced(lease, 'settle');
    state.pendingInputsAfter = settled.pendingInputs;
    this.logger.log(`turn ${settled.status}`);
  }

  /** How a run that stopped before finishing its work ends. */
  async stop(state: RunState, control: RunControl, error: unknown): Promise<void> {
    await state.live.drain().catch(() => undefined);
    state.output.lostDeltas = state.live.lost;
    const reason: unknown = control.abort.signal.aborted ? control.abort.signal.reason : error;
    if (reason instanceof LeaseLostError || error instanceof LeaseLostError) return this.writes.fenced(state.lease, 'run');
    if (reason instanceof ShuttingDownError) return this.release(state);
    if (reason instanceof TurnCancelledError) return this.settle(state, { status: 'cancelled' });
    // The database stayed unreachable past a step's retries: nothing is written; once the lease
    // expires, recovery continues the turn from its last committed step.
    if (isDependencyUnavailable(error)) {
      this.logger.warn(`run ${state.lease.runId} stopped: the database is unreachable; recovery will continue its turn`);
      return;
    }
    let publicError: PublicError;
    if (reason instanceof TurnLimitError) publicError = { code: reason.code, message: reason.message };
    else if (error instanceof ModelError) publicError = { code: error.code, message: error.message };
    else {
      this.logger.error(`run ${state.lease.runId} failed`, error instanceof Error ? error.stack : String(error));
      publicError = { code: 'run_failed', message: 'The run failed unexpectedly' };
    }
    await this.settle(state, { status: 'failed', error: publicError });
  }

  /** Yields the run into the next run of the same turn with the waiting steers. False when the run ended instead. */
  async yieldToSteers(state: RunState, control: RunControl): Promise<boolean> {
    const { held } = state;
    state.keeper.pause();
    const nextRunId = newId();
    // Cancels aimed at the next run are heard from before it exists.
    await control.listen(this.signals, nextRunId).catch(() => undefined);
    const sentAt = LeaseKeeper.now();
    const next = await this.endings.yieldToSteers(held, state.lease, state.output, nextRunId);
    if (next === 'cancelled') {
      await this.settle(state, { status: 'cancelled' });
      return false;
    }
    if (!next || !next.lease) {
      this.writes.fenced(state.lease, 'yield');
      return false;
    }
    state.lease = next.lease;
    held.run = next.run;
    setLogContext({ run_id: next.run.id });
    state.outputIndex = next.outputIndex;
    state.output = emptyOutput(state.outputIndex);
    state.keeper.switchTo(state.lease, sentAt);
    state.live.resetLoss();
    await state.publish(next.batch, next.nudges);
    return true;
  }

  /** Gives the run back at this boundary; another worker continues the turn at once. */
  private async release(state: RunState): Promise<void> {
    const { held, lease } = state;
    const successor = await this.writes.retrying(lease, () => this.endings.release(held, lease, state.output));
    if (!successor) return;
    metrics.runTakenOver('released');
    await state.publish(successor.batch, successor.nudges);
    this.logger.log(`run ${lease.runId} released at shutdown; run ${successor.run.id} continues the turn`);
  }
}
