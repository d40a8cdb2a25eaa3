import { Module } from '@nestjs/common';
import { BudgetsRepository } from './budgets.repository.js';
import { UsageClock } from './usage-clock.js';

/** Budgets as resources and the arithmetic of their checks, shared by the api and the worker. */
@Module({
  providers: [BudgetsRepository, UsageClock],
  exports: [BudgetsRepository, UsageClock],
})
export class BudgetsModule {}
