import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditLog } from '#libs/audit';
import type { Principal } from '#libs/auth';
import { type PageQuery, unixSeconds } from '#libs/database';
import { type ModelRequestRow, ModelRequestsRepository, RunsRepository, SessionsRepository } from '#libs/engine';
import type { ModelRequestDto, ModelRequestListDto } from '../dto/model-requests.dto.js';

/**
 * The exact model requests of one run of a session of any owner (the full audit of a run, for an
 * administrator's user token only; the api's controller checks the caller). A deleted or unknown session, or
 * a run not of that session, is not found. Every page read is itself audited
 * (`session.model_requests_read`, naming the reader): the entry is written before the page is
 * answered, so no request leaves without it.
 */
@Injectable()
export class ListModelRequests {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly runs: RunsRepository,
    private readonly requests: ModelRequestsRepository,
    private readonly audit: AuditLog,
  ) {}

  async execute(principal: Principal, sessionId: string, runId: string, page: PageQuery): Promise<ModelRequestListDto> {
    const session = await this.sessions.getAnyOwner(sessionId);
    await this.runs.getRun(session, runId);
    const { rows, hasMore } = await this.requests.listForRun(runId, page);
    const data = rows.map(toModelRequestDto);
    await this.audit.record(this.dataSource.manager, {
      actorId: principal.actorId,
      keyId: principal.keyId,
      action: 'session.model_requests_read',
      targetType: 'session',
      targetId: session.id,
      details: { run_id: runId, owner_id: session.ownerId, step_ids: data.map((request) => request.step_id) },
    });
    return { object: 'list', data, first_id: data[0]?.step_id ?? null, last_id: data.at(-1)?.step_id ?? null, has_more: hasMore };
  }
}

export function toModelRequestDto(row: ModelRequestRow): ModelRequestDto {
  return { object: 'model_request', step_id: row.stepId, seq: row.seq, model: row.model, request: row.request, created_at: unixSeconds(row.createdAt) };
}
