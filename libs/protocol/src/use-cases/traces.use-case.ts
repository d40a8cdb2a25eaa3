import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import type { PageQuery } from '#libs/database';
import { SessionsRepository } from '#libs/engine';
import { SessionTraces, type SessionTraceListDto } from '#libs/traces';

/** `GET …/sessions/{id}/traces`: the session's traces as OTLP JSON, one per turn with stored spans; another owner's session is 404. */
@Injectable()
export class ListSessionTraces {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly traces: SessionTraces,
  ) {}

  async execute(principal: Principal, sessionId: string, page: PageQuery): Promise<SessionTraceListDto> {
    await this.sessions.getVisible(principal.userId, sessionId);
    return this.traces.list(sessionId, page);
  }
}
