import { Injectable, Logger } from '@nestjs/common';
import { setLogContext } from '#libs/config';
import { newId } from '#libs/database';
import { type Outcome, RunEndings, TurnSettlement } from '#libs/engine';
import { metrics } from '#libs/metrics';
import { RunSignals } from '#libs/queue';
import { countSpend } from '#libs/usage';
import { DurableWrites, RUN_LOG_CONTEXT } from './durable-writes.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { RunControl } from './run-control.js';
import type { Interruption } from './run-decider.js';
import type { RunState } from './run-scope.js';

/** The session's pending inputs when the run's turn settled (what its driver has left to claim); null when it ended otherwise. */
export type PendingAfter = number | null;

/**
 * How a held run ends, or hands over to the next run of its turn: settled (completed, failed,
 * cancelled), released at shutdown for another worker, or yielded to the steers that arrived.
 * Which one is the decider's (an Interruption); this performs it.
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
  async settle(state: RunState, outcome: Outcome): Promise<PendingAfter> {
    const { held, lease } = state;
    // Its events are published and its nudges sent by the settle itself, once committed.
    const settled = await this.writes.commitStep(state, 'settle', () => this.settlement.settle(held, lease, state.output, { ...outcome, context: state.context.current }), false);
    if (settled === undefined) {
      state.trace?.ended('database_unreachable');
      return null;
    }
    if (!settled) {
      state.trace?.ended('lease_lost');
      this.writes.fenced(lease, 'settle');
      return null;
    }
    state.trace?.ended(settled.status, outcome.status === 'failed' ? outcome.error : undefined);
    this.logger.log(`turn ${settled.status}`);
    return settled.pendingInputs;
  }

  /** Ends a run that stopped before finishing its work, as the decider said: what the stream showed is kept first. */
  async end(state: RunState, ending: Interruption): Promise<PendingAfter> {
    await state.live.drain().catch(() => undefined);
    state.output.lostDeltas = state.live.lost;
    switch (ending.kind) {
      case 'lease_lost':
        state.trace?.ended('lease_lost');
        this.writes.fenced(state.lease, 'run');
        return null;
      case 'shutdown':
        state.trace?.ended('released');
        await this.release(state);
        return null;
      case 'cancel':
        return this.settle(state, { status: 'cancelled' });
      case 'database_unreachable':
        state.trace?.ended('database_unreachable');
        this.logger.warn(`run ${state.lease.runId} stopped: the database is unreachable; recovery will continue its turn`);
        return null;
      case 'failed':
        if ('unexpected' in ending) this.logger.error(`run ${state.lease.runId} failed`, ending.unexpected instanceof Error ? ending.unexpected.stack : String(ending.unexpected));
        return this.settle(state, { status: 'failed', error: ending.error });
      default:
        // A new ending without its case here fails to compile.
        throw new Error(`unknown ending ${(ending satisfies never as { kind: string }).kind}`);
    }
  }

  /**
   * Yields the run into the next run of the same turn with the waiting steers: joined, or the run
   * ended instead (a cancel that came first settles the turn, a lost lease writes nothing).
   */
  async yieldToSteers(state: RunState, control: RunControl): Promise<{ joined: true } | { joined: false; pending: PendingAfter }> {
    const { held } = state;
    state.keeper.pause();
    const nextRunId = newId();
    // Cancels aimed at the next run are heard from before it exists.
    await control.listen(this.signals, nextRunId).catch(() => undefined);
    const sentAt = LeaseKeeper.now();
    const next = await this.endings.yieldToSteers(held, state.lease, state.output, nextRunId);
    if (next === 'cancelled') return { joined: false, pending: await this.settle(state, { status: 'cancelled' }) };
    if (!next || !next.lease) {
      this.writes.fenced(state.lease, 'yield');
      return { joined: false, pending: null };
    }
    countSpend(next.spent);
    const fromRunId = state.lease.runId;
    state.lease = next.lease;
    held.run = next.run;
    state.trace?.yielded(fromRunId, next.inputTraces);
    setLogContext({ run_id: next.run.id });
    state.boundaryAt(next.outputIndex);
    state.keeper.switchTo(state.lease, sentAt);
    state.live.resetLoss();
    await state.publish(next.batch, next.nudges);
    return { joined: true };
  }

  /** Gives the run back at this boundary; another worker continues the turn at once. */
  private async release(state: RunState): Promise<void> {
    const { held, lease } = state;
    const successor = await this.writes.retrying(lease, () => this.endings.release(held, lease, state.output));
    if (!successor) return;
    countSpend(successor.spent);
    metrics.runTakenOver('released');
    await state.publish(successor.batch, successor.nudges);
    this.logger.log(`run ${lease.runId} released at shutdown; run ${successor.run.id} continues the turn`);
  }
}
