import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';

/** One recorded model request: the exact body a model call sent, keyed by the call's step. */
export interface ModelRequestRow {
  stepId: string;
  /** The step's order within its turn. */
  seq: number;
  /** The `provider:model` reference the run called. */
  model: string;
  request: Record<string, unknown>;
  createdAt: Date;
}

/**
 * The `model_requests` table (MODEL_REQUEST_AUDIT=on): what each model call of a run sent, one row
 * per model-call step, written in the transaction that commits the step and only through it. The
 * row is keyed by the step (its primary key is the step's id), so a step has at most one request
 * and a write whose step was fenced off (a lost lease, a cancel that won) writes none.
 */
@Injectable()
export class ModelRequestsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Records the request (JSON text, serialised by the caller before the transaction) of the
   * model-call step `stepId`, written earlier in the same transaction.
   * Its run, session, order and model are the step's own; a step that was not written (or is not
   * a model call) records nothing.
   */
  async record(manager: EntityManager, stepId: string, requestJson: string): Promise<void> {
    await manager.query(
      prepared(`INSERT INTO model_requests (step_id, run_id, session_id, seq, model, request, created_at)
       SELECT id, run_id, session_id, seq, input->>'model', $2::json, created_at FROM run_steps WHERE id = $1 AND kind = 'model_call'`),
      [stepId, requestJson],
    );
  }

  /**
   * A page of one run's recorded requests in step order (`asc`: oldest first). `after` is the step
   * id of the previous page's last request, of this run (400 `invalid_cursor` otherwise).
   */
  async listForRun(runId: string, page: PageQuery): Promise<Page<ModelRequestRow>> {
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    let rows: Record<string, unknown>[];
    if (page.after === undefined) {
      rows = (await this.dataSource.query(
        prepared(`SELECT step_id, seq, model, request, created_at FROM model_requests WHERE run_id = $1 ORDER BY seq ${direction} LIMIT $2`),
        [runId, page.limit + 1],
      )) as Record<string, unknown>[];
    } else {
      const anchor = isUuid(page.after)
        ? ((await this.dataSource.query(prepared(`SELECT seq FROM model_requests WHERE step_id = $1 AND run_id = $2`), [page.after, runId])) as { seq: number }[])[0]
        : undefined;
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a model request of this run');
      rows = (await this.dataSource.query(
        prepared(`SELECT step_id, seq, model, request, created_at FROM model_requests WHERE run_id = $1 AND seq ${direction === 'ASC' ? '>' : '<'} $3 ORDER BY seq ${direction} LIMIT $2`),
        [runId, page.limit + 1, anchor.seq],
      )) as Record<string, unknown>[];
    }
    return toPage(
      rows.map((row) => ({
        stepId: row.step_id as string,
        seq: Number(row.seq),
        model: row.model as string,
        request: row.request as Record<string, unknown>,
        createdAt: row.created_at as Date,
      })),
      page.limit,
    );
  }
}
