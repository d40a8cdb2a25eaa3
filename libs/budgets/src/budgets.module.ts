import { Module } from '@nestjs/common';
import { BudgetsRepository } from './budgets.repository.js';

/** Budgets as resources and the arithmetic of their checks, shared by the api and the worker. */
@Module({
  providers: [BudgetsRepository],
  exports: [BudgetsRepository],
})
export class BudgetsModule {}
