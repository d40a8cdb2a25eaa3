import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { budgetsInScope, type BudgetReached, type CallEstimate, firstReached, releaseRun, reserveCall, spentInPeriods } from '#libs/budgets';
import { AppConfig } from '#libs/config';
import { RunSuspensions } from '#libs/engine';
import { DurableWrites, RUN_LOG_CONTEXT } from './durable-writes.js';
import { LeaseLostError, TurnCancelledError } from './run-errors.js';
import type { RunState } from './run-scope.js';

/**
 * A budgeted turn's gate before each model and tool call (README "Budgets"): one transaction locks
 * the budgets in the session's scope (concurrent gates of one budget take turns), reads what each
 * has spent in its period plus what other calls in flight hold, and either reserves this call's
 * estimate or says which budget has no room. A call's reservation lives until its step commits
 * (`release`), its run ends, or its run's lease lapses (a dead worker's frees itself). Turns
 * without a budget in scope never get here.
 */
@Injectable()
export class BudgetGate {
  private readonly logger = new Logger(RUN_LOG_CONTEXT);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly suspensions: RunSuspensions,
    private readonly writes: DurableWrites,
    private readonly config: AppConfig,
  ) {}

  /** Checks the budgets before a call and reserves its estimate; the budget without room, or null when the call may start. */
  async check(state: RunState, call: { kind: 'model' } | { kind: 'tool'; call_id: string }): Promise<BudgetReached | null> {
    const { held } = state;
    const estimate: CallEstimate =
      call.kind === 'model'
        ? { callKey: 'model', modelCalls: 1, toolCalls: 0, tokens: state.context.current?.tokens ?? held.turn.context?.tokens ?? 0, model: held.run.model }
        : { callKey: `tool:${call.call_id}`, modelCalls: 0, toolCalls: 1, tokens: 0, model: null };
    const runId = state.lease.runId;
    const checked = await this.writes.retrying(state.lease, () =>
      this.dataSource.transaction(async (manager) => {
        const budgets = await budgetsInScope(manager, held.turn.sessionId, true);
        if (budgets.length === 0) return { reached: null, covered: false };
        const ids = budgets.map((budget) => budget.id);
        const reached = firstReached(budgets, await spentInPeriods(manager, ids, runId, held.turn.id));
        if (!reached) await reserveCall(manager, runId, ids, estimate, this.config.runLeaseMs * 4);
        return { reached, covered: true };
      }),
      true,
    );
    if (checked === undefined || checked === null) throw new LeaseLostError();
    // The last budget was deleted meanwhile: the rest of the run checks nothing more.
    if (!checked.covered) held.budgeted = false;
    return checked.reached;
  }

  /** Stops for a budget without room: at a `budget` waitpoint (pause), or announced before the turn fails (fail). */
  async stop(state: RunState, reached: BudgetReached): Promise<void> {
    const { held, lease } = state;
    if (reached.onExceeded === 'fail') {
      const batch = await this.writes.retrying(lease, () => this.suspensions.announceBudgetReached(held, lease, reached), true);
      if (!batch) throw new LeaseLostError();
      await state.publish(batch);
      return;
    }
    const batch = await this.writes.retrying(lease, () => this.suspensions.suspendForBudget(held, lease, reached), true);
    if (batch === 'cancelled') throw new TurnCancelledError();
    if (!batch) {
      this.writes.fenced(lease, 'waitpoint');
      return;
    }
    state.keeper.pause();
    await state.publish(batch);
    this.logger.log(`turn ${held.turn.id} waits: budget ${reached.budgetId} reached its ${reached.limit} limit`);
  }

  /** The run's calls so far are recorded (or it ended): what they reserved is released. A failure leaves it to the lease's end. */
  async release(state: RunState, runId = state.lease.runId): Promise<void> {
    if (!state.held.budgeted) return;
    await releaseRun(this.dataSource.manager, runId).catch((error: unknown) => this.logger.warn(`run ${runId}: reservations left to expire: ${String(error)}`));
  }
}
