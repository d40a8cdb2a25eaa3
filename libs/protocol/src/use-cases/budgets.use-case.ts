import { Injectable } from '@nestjs/common';
import { AgentsService } from '#libs/agents';
import { agentViewerOf, assertAdmin, type Principal } from '#libs/auth';
import { type Budget, type BudgetScopeKind, BudgetsRepository, type BudgetUsage, type BudgetViewer, periodBounds, spentOf, UsageClock } from '#libs/budgets';
import { listEnvelope, newId, type PageQuery, unixSeconds } from '#libs/database';
import { ProjectsRepository, SessionsRepository } from '#libs/engine';
import { DomainError } from '#libs/errors';
import type { BudgetDeletedDto, BudgetDto, BudgetListDto, BudgetScopeDto, BudgetScopeKey, CreateBudgetDto, SetUsageClockDto, UpdateBudgetDto, UsageClockDto } from '../dto/budget.dto.js';

const SCOPE_KEY_OF: Record<BudgetScopeKind, BudgetScopeKey> = {
  session: 'session_id',
  project: 'project_id',
  app: 'app_id',
  end_user: 'end_user_id',
  agent: 'agent_id',
  user: 'user_id',
};

/**
 * The account a caller's budgets belong to and sum: the product user's own, which an app's end
 * user (an app-bound key) acts for; with who made it, the budgets a caller sees. An app-bound key
 * sees, makes and changes only its app's budgets (those it made, which cover only its app's end
 * users), whichever end user it names: X-End-User-Id is chosen by the app's backend, which holds
 * the key, so it is no boundary between budgets. A product user sees every budget of its account.
 */
export function budgetViewerOf(principal: Principal): BudgetViewer {
  return { accountId: principal.appId !== null ? principal.actorId : principal.userId, actorId: principal.actorId, appId: principal.appId };
}

export function toBudgetDto(budget: Budget, usage: BudgetUsage | undefined): BudgetDto {
  const bounds = usage ? periodBounds(budget.period, usage.clock) : { start: null, end: null };
  return {
    id: budget.id,
    object: 'agent.budget',
    scope: { [SCOPE_KEY_OF[budget.scopeKind]]: budget.scopeId },
    limits: budget.limits,
    period: budget.period,
    on_exceeded: budget.onExceeded,
    spent: spentOf(usage),
    period_start: bounds.start === null ? null : unixSeconds(bounds.start),
    period_end: bounds.end === null ? null : unixSeconds(bounds.end),
    metadata: budget.metadata,
    created_at: unixSeconds(budget.createdAt),
    updated_at: unixSeconds(budget.updatedAt),
  };
}

/** Budgets on an account (`user` scope) bind that user: only an administrator sets, changes or removes them. */
function assertMayChange(principal: Principal, budget: Budget): void {
  if (budget.scopeKind === 'user') assertAdmin(principal);
}

/**
 * `POST /budgets`: a budget on a scope the caller sees — its session or project (404 otherwise),
 * an agent it may use, an app (an app-bound key: its own), an end user (an app-bound key: of its
 * app), or (administrators) a product user's whole account. Through an app-bound key, the budget
 * is the app's and bounds only the app's end users' calls.
 */
@Injectable()
export class CreateBudget {
  constructor(
    private readonly budgets: BudgetsRepository,
    private readonly sessions: SessionsRepository,
    private readonly projects: ProjectsRepository,
    private readonly agents: AgentsService,
  ) {}

  async execute(principal: Principal, dto: CreateBudgetDto): Promise<BudgetDto> {
    const viewer = budgetViewerOf(principal);
    const scope = await this.resolveScope(principal, dto.scope, viewer);
    const budget = await this.budgets.create(null, {
      id: newId(),
      accountId: scope.accountId,
      createdBy: principal.actorId,
      scopeKind: scope.kind,
      scopeId: scope.id,
      appId: scope.appId,
      limits: { ...dto.limits },
      period: dto.period ?? 'lifetime',
      onExceeded: dto.on_exceeded ?? 'pause',
      metadata: dto.metadata ?? {},
    });
    return toBudgetDto(budget, (await this.budgets.spent(null, [budget])).get(budget.id));
  }

  private async resolveScope(principal: Principal, scope: BudgetScopeDto, viewer: BudgetViewer): Promise<{ kind: BudgetScopeKind; id: string; appId: string | null; accountId: string }> {
    // Made through an app-bound key, a budget is its app's whatever the scope: it covers only that
    // app's end users (an agent or project budget never binds another app or the product user).
    const own = { appId: viewer.appId, accountId: viewer.accountId };
    if (scope.session_id !== undefined) {
      // The id as stored (an upper-case spelling of a uuid finds the row but would match no ledger row).
      const session = await this.sessions.getVisible(principal.userId, scope.session_id);
      return { kind: 'session', id: session.id, ...own };
    }
    if (scope.project_id !== undefined) {
      const project = await this.projects.getVisible(principal.userId, scope.project_id);
      return { kind: 'project', id: project.id, ...own };
    }
    if (scope.agent_id !== undefined) {
      const agent = await this.agents.getVisible(agentViewerOf(principal), scope.agent_id);
      return { kind: 'agent', id: agent.id, ...own };
    }
    if (scope.app_id !== undefined) {
      if (principal.appId !== null && principal.appId !== scope.app_id) throw DomainError.notFound(`App ${scope.app_id}`);
      return { kind: 'app', id: scope.app_id, ...own };
    }
    if (scope.end_user_id !== undefined) return { kind: 'end_user', id: scope.end_user_id, ...own };
    // The DTO holds exactly one key: what is left is user_id.
    const userId = scope.user_id!;
    assertAdmin(principal);
    if (!(await this.budgets.isProductUser(userId))) throw DomainError.notFound(`User ${userId}`);
    return { kind: 'user', id: userId, appId: null, accountId: userId };
  }
}

/** `GET /budgets`: the caller's budgets (and those an administrator made on other accounts), one page, each with what it spent. */
@Injectable()
export class ListBudgets {
  constructor(private readonly budgets: BudgetsRepository) {}

  async execute(principal: Principal, page: PageQuery): Promise<BudgetListDto> {
    const { rows, hasMore } = await this.budgets.list(budgetViewerOf(principal), page);
    const usage = await this.budgets.spent(null, rows);
    const data = rows.map((budget) => toBudgetDto(budget, usage.get(budget.id)));
    return listEnvelope(data, hasMore);
  }
}

/** `GET /budgets/{id}`: one budget with what its scope spent in the current period. */
@Injectable()
export class GetBudget {
  constructor(private readonly budgets: BudgetsRepository) {}

  async execute(principal: Principal, id: string): Promise<BudgetDto> {
    const budget = await this.budgets.get(budgetViewerOf(principal), id);
    return toBudgetDto(budget, (await this.budgets.spent(null, [budget])).get(budget.id));
  }
}

/** `POST /budgets/{id}`: new limits, period, behaviour or metadata; a raised limit is room the next check sees. */
@Injectable()
export class UpdateBudget {
  constructor(private readonly budgets: BudgetsRepository) {}

  async execute(principal: Principal, id: string, dto: UpdateBudgetDto): Promise<BudgetDto> {
    const viewer = budgetViewerOf(principal);
    assertMayChange(principal, await this.budgets.get(viewer, id));
    const budget = await this.budgets.update(viewer, id, {
      limits: dto.limits === undefined ? undefined : { ...dto.limits },
      period: dto.period,
      onExceeded: dto.on_exceeded,
      metadata: dto.metadata,
    });
    return toBudgetDto(budget, (await this.budgets.spent(null, [budget])).get(budget.id));
  }
}

/** `DELETE /budgets/{id}`: the budget no longer bounds anything (a turn waiting at it is answered as any waitpoint is). */
@Injectable()
export class DeleteBudget {
  constructor(private readonly budgets: BudgetsRepository) {}

  async execute(principal: Principal, id: string): Promise<BudgetDeletedDto> {
    const viewer = budgetViewerOf(principal);
    assertMayChange(principal, await this.budgets.get(viewer, id));
    await this.budgets.delete(viewer, id);
    return { id, object: 'agent.budget', deleted: true };
  }
}

/** `PUT /admin/usage-clock`: administrators move the clock budget periods and report days go by (where the deployment allows it; the route says so). */
@Injectable()
export class SetUsageClock {
  constructor(private readonly clock: UsageClock) {}

  async execute(principal: Principal, dto: SetUsageClockDto): Promise<UsageClockDto> {
    assertAdmin(principal);
    const { offsetS, now } = await this.clock.set(dto.offset_s);
    return { object: 'usage_clock', offset_s: offsetS, now: unixSeconds(now) };
  }
}

export const BUDGET_USE_CASES = [CreateBudget, ListBudgets, GetBudget, UpdateBudget, DeleteBudget, SetUsageClock];
