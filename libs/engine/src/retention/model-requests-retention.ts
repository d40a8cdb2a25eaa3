import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { deleteDueBatch, type DueRows, dueLagSeconds, type RetentionBatch, type RetentionTask } from '#libs/database';

/** Recorded requests older than MODEL_REQUEST_RETENTION_S, oldest first through `model_requests_created_idx`. */
const DUE: DueRows = {
  table: 'model_requests',
  due: 'created_at < lifecycle_now() - make_interval(secs => $1)',
  order: 'created_at',
};

/**
 * Retention of the exact model requests (MODEL_REQUEST_AUDIT=on): whole prompts, image data URLs
 * included, the largest rows a turn writes. A request older than MODEL_REQUEST_RETENTION_S by the
 * lifecycle clock is removed whatever its session's state; its step, run and items stay (the
 * timeline shows the call, the audit route lists no request for it). Nothing else refers to it.
 */
@Injectable()
export class ModelRequestsRetention implements RetentionTask {
  readonly kind = 'model_requests' as const;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  runBatch(limit: number): Promise<RetentionBatch> {
    return deleteDueBatch(this.dataSource, DUE, this.config.modelRequestRetentionS, limit);
  }

  lagSeconds(): Promise<number> {
    return dueLagSeconds(this.dataSource, DUE.table, 'created_at', 'true', this.config.modelRequestRetentionS);
  }
}
