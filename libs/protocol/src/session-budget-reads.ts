import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { BudgetsRepository, readSessionBudgets, sessionBudgetView, spentOf } from '#libs/budgets';
import type { SessionDto } from './dto/session.dto.js';

/**
 * `yuxi.budget` on the session reads: one statement for a page of sessions (their own budgets by
 * derived id), and on a read of one session with a budget, what it spent. A turn never reads it.
 */
@Injectable()
export class SessionBudgetReads {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly budgets: BudgetsRepository,
  ) {}

  async show<T extends Pick<SessionDto, 'id' | 'yuxi'>>(sessions: T[], withSpent: boolean): Promise<T[]> {
    const found = await readSessionBudgets(this.dataSource.manager, sessions.map((session) => session.id));
    const usage = withSpent && found.size > 0 ? await this.budgets.spent(null, [...found.values()]) : null;
    for (const session of sessions) {
      const budget = found.get(session.id);
      session.yuxi.budget = budget ? sessionBudgetView(budget, usage ? spentOf(usage.get(budget.id)) : undefined) : null;
    }
    return sessions;
  }
}
