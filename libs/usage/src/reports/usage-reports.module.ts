import { Module } from '@nestjs/common';
import { UsageReportsRepository } from './usage-reports.repository.js';

/** Usage reports over the ledger (read only; the ledger's writes are the engine's). */
@Module({ providers: [UsageReportsRepository], exports: [UsageReportsRepository] })
export class UsageReportsModule {}
