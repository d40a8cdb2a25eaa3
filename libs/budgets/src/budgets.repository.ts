import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { deleteRowsBatch, isUuid, type Page, type PageQuery, prepared, type RowStorage, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { type Budget, BUDGET_LIMIT_KEYS, type BudgetLimits, type BudgetOnExceeded, type BudgetPeriod, type BudgetScopeKind, type BudgetSpent } from './budget.types.js';
import { type BudgetUsage, type CallEstimate, firstBudgetWithoutRoom, type LimitReached, NO_SPENDING } from './budget-room.js';
import { BUDGET_COLUMNS, budgetsInScopeSql, SPENT_SQL } from './budget-sql.js';

/** A budget to create: all but the times, which the database stamps. */
export type NewBudget = Omit<Budget, 'createdAt' | 'updatedAt'>;

export interface BudgetPatch {
  limits?: BudgetLimits;
  period?: BudgetPeriod;
  onExceeded?: BudgetOnExceeded;
  metadata?: Record<string, string>;
}

/**
 * Who sees a budget: the account it sums (a product user, and the end users of its apps acting for
 * it) and whoever made it (an administrator's budget on another user); an app (`appId`: an
 * app-bound key) only the budgets made for it. Another caller's is not found.
 */
export interface BudgetViewer {
  accountId: string;
  actorId: string;
  appId: string | null;
}

const VISIBLE = '(account_id = $2 OR created_by = $3) AND ($4::varchar IS NULL OR app_id = $4::varchar)';

function viewerParams(viewer: BudgetViewer): [string, string, string | null] {
  return [viewer.accountId, viewer.actorId, viewer.appId];
}

/**
 * Budgets in SQL: the resources (owned by their account), the budgets covering a session, what
 * each spent in its current period, and the reservations of calls in flight.
 */
@Injectable()
export class BudgetsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * The purge of deleted sessions (libs/retention SessionPurge): their own budgets (`scope_kind
   * 'session'`, at most one each), by budgets_scope_idx. What the sessions spent stays in
   * usage_ledger (accounting); a reservation naming the budget was released when its run ended.
   */
  purgeSessions(sessionIds: string[], limit: number): Promise<RowStorage> {
    return deleteRowsBatch(this.dataSource, 'budgets', `t.scope_kind = 'session' AND t.scope_id = ANY($1::text[])`, [sessionIds], limit);
  }

  async create(manager: EntityManager | null, budget: NewBudget): Promise<Budget> {
    const [row] = (await (manager ?? this.dataSource.manager).query(
      prepared(`INSERT INTO budgets (id, account_id, created_by, scope_kind, scope_id, app_id, limits, period, on_exceeded, metadata, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now(), now()) RETURNING ${BUDGET_COLUMNS}`),
      [budget.id, budget.accountId, budget.createdBy, budget.scopeKind, budget.scopeId, budget.appId, JSON.stringify(budget.limits), budget.period, budget.onExceeded, JSON.stringify(budget.metadata)],
    )) as Record<string, unknown>[];
    return budgetFromRow(row!);
  }

  async get(viewer: BudgetViewer, id: string): Promise<Budget> {
    const rows = isUuid(id)
      ? ((await this.dataSource.query(prepared(`SELECT ${BUDGET_COLUMNS} FROM budgets WHERE id = $1 AND ${VISIBLE}`), [id, ...viewerParams(viewer)])) as Record<string, unknown>[])
      : [];
    if (!rows[0]) throw DomainError.notFound(`Budget ${id}`);
    return budgetFromRow(rows[0]);
  }

  /** The viewer's budgets, by creation (cursor pages); `scope` narrows to one scope. */
  async list(viewer: BudgetViewer, page: PageQuery, scope?: { kind: BudgetScopeKind; id: string }): Promise<Page<Budget>> {
    const values: unknown[] = [page.limit + 1, ...viewerParams(viewer)];
    let where = VISIBLE;
    if (scope) {
      values.push(scope.kind, scope.id);
      where += ` AND scope_kind = $${values.length - 1} AND scope_id = $${values.length}`;
    }
    if (page.after !== undefined) {
      const anchor = isUuid(page.after)
        ? ((await this.dataSource.query(prepared(`SELECT 1 FROM budgets WHERE id = $1 AND ${VISIBLE}`), [page.after, ...viewerParams(viewer)])) as unknown[])
        : [];
      if (anchor.length === 0) throw new DomainError('invalid_cursor', 'The `after` cursor is not a budget of this caller');
      values.push(page.after);
      where += ` AND (created_at, id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM budgets WHERE id = $${values.length})`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(`SELECT ${BUDGET_COLUMNS} FROM budgets WHERE ${where} ORDER BY created_at ${direction}, id ${direction} LIMIT $1`, values)) as Record<
      string,
      unknown
    >[];
    return toPage(rows.map(budgetFromRow), page.limit);
  }

  /** Applies the given fields (limits and metadata are replaced whole). */
  async update(viewer: BudgetViewer, id: string, patch: BudgetPatch): Promise<Budget> {
    if (!isUuid(id)) throw DomainError.notFound(`Budget ${id}`);
    const result: unknown = await this.dataSource.query(
      prepared(`UPDATE budgets SET limits = coalesce($5::jsonb, limits), period = coalesce($6, period), on_exceeded = coalesce($7, on_exceeded),
         metadata = coalesce($8::jsonb, metadata), updated_at = now()
       WHERE id = $1 AND ${VISIBLE} RETURNING ${BUDGET_COLUMNS}`),
      [id, ...viewerParams(viewer), jsonOrNull(patch.limits), patch.period ?? null, patch.onExceeded ?? null, jsonOrNull(patch.metadata)],
    );
    const updated = firstRow(result);
    if (!updated) throw DomainError.notFound(`Budget ${id}`);
    return budgetFromRow(updated);
  }

  /** Deletes the budget (reservations naming it no longer count for anything: reads go by budget). */
  async delete(viewer: BudgetViewer, id: string): Promise<void> {
    if (!isUuid(id)) throw DomainError.notFound(`Budget ${id}`);
    const rows = (await this.dataSource.query(prepared(`DELETE FROM budgets WHERE id = $1 AND ${VISIBLE} RETURNING id`), [id, ...viewerParams(viewer)])) as [unknown[], number];
    if (rows[1] !== 1) throw DomainError.notFound(`Budget ${id}`);
  }

  /**
   * The budgets covering the session, by id; with `lock` locked FOR UPDATE in that order, so two
   * checks of a budget they share run one after the other (the second sees the first's reservation).
   */
  async inScope(manager: EntityManager, sessionId: string, options: { lock?: boolean } = {}): Promise<Budget[]> {
    if (!isUuid(sessionId)) return [];
    const rows = (await manager.query(prepared(budgetsInScopeSql(options.lock === true)), [sessionId])) as Record<string, unknown>[];
    return rows.map(budgetFromRow);
  }

  /**
   * What each budget spent in its current period: committed ledger sums, the reservations of calls
   * in flight (while their runs hold a live lease), and (with `asking`) whether the asking call's
   * turn is counted already. One statement.
   */
  async spent(manager: EntityManager | null, budgets: readonly Pick<Budget, 'id'>[], asking?: { turnId: string | null }): Promise<Map<string, BudgetUsage>> {
    const usage = new Map<string, BudgetUsage>();
    if (budgets.length === 0) return usage;
    const rows = (await (manager ?? this.dataSource.manager).query(prepared(SPENT_SQL), [
      budgets.map((budget) => budget.id),
      asking?.turnId ?? null,
    ])) as Record<string, unknown>[];
    for (const row of rows) {
      usage.set(row.id as string, {
        budgetId: row.id as string,
        spent: unitsOf(row, ''),
        // Reservations hold no time: a call's wall time is known only once it ends.
        reserved: unitsOf(row, 'r_'),
        turnCounted: row.turn_counted === true,
        clock: row.clock as Date,
      });
    }
    return usage;
  }

  /**
   * The check before a call, in the caller's transaction: the budgets covering the session locked
   * in id order, what each spent and has reserved, and the first without room for the call (null:
   * every one has room). Two statements; a session with no budget in scope costs the first only.
   * They cannot be one: a statement reads with the snapshot it started with, so sums read in the
   * statement that waited for the locks would miss the reservation the previous holder committed.
   */
  async check(manager: EntityManager, sessionId: string, asking: { turnId: string }): Promise<{ budgets: Budget[]; usage: Map<string, BudgetUsage>; reached: ({ budget: Budget } & LimitReached) | null }> {
    const budgets = await this.inScope(manager, sessionId, { lock: true });
    const usage = await this.spent(manager, budgets, asking);
    return { budgets, usage, reached: firstBudgetWithoutRoom(budgets, usage) };
  }

  /**
   * Holds `estimate` against `budgetIds` for the call `callKey` of run `runId`. It counts while the
   * run holds a live lease (SPENT_SQL), until it is released (in the transaction that writes the
   * call's ledger row, at the run's end, or when the run is interrupted). Reserving the same call
   * again replaces it. `expires_at` (now + `ttlS`) is only a backstop for deleting rows nobody
   * released: the same statement sweeps those of these budgets past it whose run holds no live lease
   * (never this run's own, so the insert and the sweep never touch one row).
   */
  async reserve(manager: EntityManager, runId: string, callKey: string, budgetIds: readonly string[], estimate: CallEstimate, ttlS: number): Promise<void> {
    await manager.query(
      // The sweep skips rows another transaction holds (recovery deleting a dead run's): never a
      // wait, so never a deadlock, while this gate holds its budgets' locks.
      prepared(`WITH swept AS (
         DELETE FROM budget_reservations WHERE (run_id, call_key) IN (
           SELECT y.run_id, y.call_key FROM budget_reservations y WHERE y.budget_ids && $3::uuid[] AND y.run_id <> $1 AND y.expires_at < now()
             AND NOT EXISTS (SELECT 1 FROM runs rr WHERE rr.id = y.run_id AND rr.lease_owner IS NOT NULL AND rr.lease_expires_at > now())
           FOR UPDATE OF y SKIP LOCKED)
       )
       INSERT INTO budget_reservations (run_id, call_key, budget_ids, tokens, cost_microusd, model_calls, tool_calls, turns, expires_at)
       -- USD per million tokens is micro-dollars per token.
       VALUES ($1, $2, $3::uuid[], $4::bigint, CASE WHEN $10::text IS NULL THEN $5::bigint
         ELSE ceil($4::bigint * coalesce((SELECT input_per_mtok_usd FROM model_prices WHERE model = $10::text), 0))::bigint END,
         $6, $7, $8, now() + make_interval(secs => $9))
       ON CONFLICT (run_id, call_key) DO UPDATE SET budget_ids = EXCLUDED.budget_ids, tokens = EXCLUDED.tokens, cost_microusd = EXCLUDED.cost_microusd,
         model_calls = EXCLUDED.model_calls, tool_calls = EXCLUDED.tool_calls, turns = EXCLUDED.turns, expires_at = EXCLUDED.expires_at`),
      [runId, callKey, budgetIds, Math.max(0, Math.ceil(estimate.tokens)), Math.max(0, Math.ceil(estimate.cost_microusd)), estimate.model_calls, estimate.tool_calls, estimate.turns > 0 ? 1 : 0, ttlS, estimate.priceModel ?? null],
    );
  }

  /** Frees the call's reservation, or (no `callKey`) every reservation of the run. */
  async release(manager: EntityManager, runId: string, callKey?: string): Promise<void> {
    if (callKey === undefined) await manager.query(prepared(`DELETE FROM budget_reservations WHERE run_id = $1`), [runId]);
    else await manager.query(prepared(`DELETE FROM budget_reservations WHERE run_id = $1 AND call_key = $2`), [runId, callKey]);
  }

  /** Whether `userId` is a product user (an account a `user` budget can bind; an app's end user is none). */
  async isProductUser(userId: string): Promise<boolean> {
    if (!isUuid(userId)) return false;
    const rows = (await this.dataSource.query(prepared(`SELECT 1 FROM users WHERE id = $1 AND kind = 'user'`), [userId])) as unknown[];
    return rows.length > 0;
  }
}

function firstRow(result: unknown): Record<string, unknown> | undefined {
  // An UPDATE … RETURNING answers [rows, count] through TypeORM's query().
  if (Array.isArray(result) && Array.isArray(result[0])) return (result[0] as Record<string, unknown>[])[0];
  return Array.isArray(result) ? (result[0] as Record<string, unknown> | undefined) : undefined;
}

function jsonOrNull(value: object | undefined): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

export function budgetFromRow(row: Record<string, unknown>): Budget {
  return {
    id: row.id as string,
    accountId: row.account_id as string,
    createdBy: row.created_by as string,
    scopeKind: row.scope_kind as BudgetScopeKind,
    scopeId: row.scope_id as string,
    appId: (row.app_id as string | null) ?? null,
    limits: (row.limits as BudgetLimits | null) ?? {},
    period: row.period as BudgetPeriod,
    onExceeded: row.on_exceeded as BudgetOnExceeded,
    metadata: (row.metadata as Record<string, string> | null) ?? {},
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/** A budget's committed sums as its resource shows them (`spent`). */
export function spentOf(usage: BudgetUsage | undefined): BudgetSpent {
  return { ...(usage?.spent ?? NO_SPENDING) };
}

/** A row's sums of every limit key, its columns named `<prefix><key>` (absent: 0). */
function unitsOf(row: Record<string, unknown>, prefix: string): BudgetSpent {
  return Object.fromEntries(BUDGET_LIMIT_KEYS.map((key) => [key, Number(row[`${prefix}${key}`] ?? 0)])) as BudgetSpent;
}
