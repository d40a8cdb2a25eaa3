import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { deleteDueBatch, type DueRows, dueLagSeconds, type RetentionBatch, type RetentionTask } from '#libs/database';

/** Signals delivered longer than COOPERATION_SIGNAL_RETENTION_S ago, oldest delivery first through `cooperation_signals_delivered_idx`. */
const DELIVERED = 'delivered_at IS NOT NULL';
const DUE: DueRows = {
  table: 'cooperation_signals',
  due: `${DELIVERED} AND delivered_at < lifecycle_now() - make_interval(secs => $1)`,
  order: 'delivered_at',
};

/**
 * Retention of cooperation signals (a member's ended turn, or its settling, for its parent). A
 * signal is consumed once delivered (`delivered_at`, under the parent's lock): its parent's stream
 * carries the member's state from then on, and a waiting coordinator reads its members' turns, never
 * a delivered signal. So a signal delivered longer than COOPERATION_SIGNAL_RETENTION_S ago by the
 * lifecycle clock is removed. An undelivered one stays, however old: a coordinator waits on it (a
 * member coordinator whose tree has no free slot keeps its signals until one frees). The key a
 * signal holds against a second write of its turn is no longer needed by then: a turn ends once.
 */
@Injectable()
export class CooperationSignalsRetention implements RetentionTask {
  readonly kind = 'cooperation_signals' as const;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  runBatch(limit: number): Promise<RetentionBatch> {
    return deleteDueBatch(this.dataSource, DUE, this.config.cooperationSignalRetentionS, limit);
  }

  lagSeconds(): Promise<number> {
    return dueLagSeconds(this.dataSource, DUE.table, 'delivered_at', DELIVERED, this.config.cooperationSignalRetentionS);
  }
}
