import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { BudgetsRepository, type CallEstimate } from '#libs/budgets';
import { type BudgetReached, budgetReachedOf, RunSuspensions } from '#libs/engine';
import { DurableWrites, RUN_LOG_CONTEXT } from './durable-writes.js';
import { LeaseLostError, TurnCancelledError } from './run-errors.js';
import type { RunState } from './run-scope.js';

/**
 * After how long a reservation nobody released may be swept (a backstop only: a reservation counts
 * while its run holds a live lease, which the heartbeat renews for a call of any length, and stops
 * counting the moment the run has none, e.g. its worker died; recovery deletes it with the run).
 */
const RESERVATION_TTL_S = 600;

/** A call the gate checks: the turn's next model call, a tool call, or a sampling request made during a tool call. */
export type GatedCall = { kind: 'model' } | { kind: 'tool'; call_id: string } | { kind: 'sampling'; key: string; tokens: number };

/**
 * A budgeted turn's gate before each model and tool call (README "Budgets"): one transaction locks
 * the budgets in the session's scope (concurrent gates of one budget take turns), reads what each
 * has spent in its period plus what other calls in flight hold, and either reserves this call's
 * estimate or says which budget has no room. A call's reservation counts while its run holds a
 * live lease, until its ledger row is written (the same statement deletes it) or its run ends
 * (`release`, settle, or the interruption of a run whose worker died). Turns without a budget in
 * scope never get here.
 */
@Injectable()
export class BudgetGate {
  private readonly logger = new Logger(RUN_LOG_CONTEXT);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly suspensions: RunSuspensions,
    private readonly writes: DurableWrites,
    private readonly budgets: BudgetsRepository,
  ) {}

  /**
   * Checks the budgets before a call and reserves its estimate; the budget without room, or null
   * when the call may start. A `sampling` call is a model call an MCP server asks for during a tool
   * call: reserved under its own key (`key`, unique in the run) with the estimate of its request's tokens.
   */
  async check(state: RunState, call: GatedCall): Promise<BudgetReached | null> {
    const { held } = state;
    const runId = state.lease.runId;
    const checked = await this.writes.retrying(
      state.lease,
      () =>
        this.dataSource.transaction(async (manager) => {
          const { budgets, usage, reached } = await this.budgets.check(manager, held.turn.sessionId, { turnId: held.turn.id });
          if (budgets.length === 0) return { reached: null, covered: false };
          if (reached) return { reached: budgetReachedOf(reached), covered: true };
          // The call's turn counts once for a budget that has not counted it yet (the turn's first call there).
          const opensTurn = budgets.some((budget) => usage.get(budget.id)?.turnCounted !== true);
          const estimate =
            call.kind === 'tool'
              ? { model_calls: 0, tool_calls: 1, tokens: 0, cost_microusd: 0, turns: opensTurn ? 1 : 0 }
              : this.modelCallEstimate(state, opensTurn, call.kind === 'sampling' ? call.tokens : undefined);
          const key = call.kind === 'model' ? 'model' : call.kind === 'tool' ? `tool:${call.call_id}` : call.key;
          await this.budgets.reserve(manager, runId, key, budgets.map((budget) => budget.id), estimate, RESERVATION_TTL_S);
          return { reached: null, covered: true };
        }),
      true,
    );
    if (checked === undefined || checked === null) throw new LeaseLostError();
    // The last budget was deleted meanwhile: the rest of the run checks nothing more.
    if (!checked.covered) held.budgeted = false;
    return checked.reached;
  }

  /**
   * A model call's estimate: one call, the tokens of the context it is about to send (its last
   * call's, or the turn's as last recorded; a sampling request's own), priced at the model's input
   * price now by the reservation's statement (0 unpriced): no read of its own.
   */
  private modelCallEstimate(state: RunState, opensTurn: boolean, requestTokens?: number): CallEstimate {
    const { held } = state;
    const tokens = requestTokens ?? state.context.current?.tokens ?? held.turn.context?.tokens ?? 0;
    return { model_calls: 1, tool_calls: 0, tokens, cost_microusd: 0, turns: opensTurn ? 1 : 0, priceModel: held.run.model };
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
    const batch = await this.writes.commitStep(state, 'waitpoint', () => this.suspensions.suspendForBudget(held, lease, reached));
    if (batch === 'cancelled') throw new TurnCancelledError();
    if (!batch) {
      this.writes.fenced(lease, 'waitpoint');
      return;
    }
    state.trace?.waiting('budget');
    state.keeper.pause();
    await state.publish(batch);
    this.logger.log(`turn ${held.turn.id} waits: budget ${reached.budgetId} reached its ${reached.limit} limit`);
  }

  /** The run ended: what its calls still reserved is released. A failure leaves the rows to the sweep (they count no more: the run holds no lease). */
  async release(state: RunState, runId = state.lease.runId): Promise<void> {
    if (!state.held.budgeted) return;
    await this.budgets.release(this.dataSource.manager, runId).catch((error: unknown) => this.logger.warn(`run ${runId}: reservations left to expire: ${String(error)}`));
  }
}
