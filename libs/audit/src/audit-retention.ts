import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { deleteDueBatch, type DueRows, dueLagSeconds, type RetentionBatch, type RetentionTask } from '#libs/database';

/** Entries older than AUDIT_RETENTION_S, oldest first through `audit_log_page_idx (created_at, id)`. */
const DUE: DueRows = {
  table: 'audit_log',
  due: 'created_at < lifecycle_now() - make_interval(secs => $1)',
  order: 'created_at, id',
};

/**
 * Retention of the audit trail: an entry older than AUDIT_RETENTION_S (400 days by default, at
 * least a day) by the lifecycle clock is removed, whatever its action. Nothing refers to an entry.
 */
@Injectable()
export class AuditRetention implements RetentionTask {
  readonly kind = 'audit' as const;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  runBatch(limit: number): Promise<RetentionBatch> {
    return deleteDueBatch(this.dataSource, DUE, this.config.auditRetentionS, limit);
  }

  lagSeconds(): Promise<number> {
    return dueLagSeconds(this.dataSource, DUE.table, 'created_at', 'true', this.config.auditRetentionS);
  }
}
