import { Injectable } from '@nestjs/common';
import { assertViewer, type Principal } from '#libs/auth';
import { listEnvelope, type PageQuery } from '#libs/database';
import { DomainError } from '#libs/errors';
import { type FoundSession, type SessionOwner, SessionSearch, type SessionSearchFilter, toSessionDto } from '#libs/engine';
import type { AdminSessionDto, AdminSessionListDto, SessionOwnerDto } from './dto/admin-session.dto.js';

/**
 * The read side of the operator API: every owner's sessions, for viewers, operators and
 * administrators only (the role is checked before anything is read). Deleted sessions are not
 * found here either.
 */
@Injectable()
export class OperatorSessionQueries {
  constructor(private readonly search: SessionSearch) {}

  async list(principal: Principal, filter: SessionSearchFilter, page: PageQuery): Promise<AdminSessionListDto> {
    assertViewer(principal);
    const { rows, hasMore } = await this.search.search(filter, page);
    const data = rows.map(toAdminSessionDto);
    return listEnvelope(data, hasMore);
  }

  async get(principal: Principal, sessionId: string): Promise<AdminSessionDto> {
    assertViewer(principal);
    const found = await this.search.find(sessionId);
    if (!found) throw DomainError.notFound(`Session ${sessionId}`);
    return toAdminSessionDto(found);
  }
}

function toAdminSessionDto({ session, owner }: FoundSession): AdminSessionDto {
  const dto = toSessionDto(session);
  return { ...dto, yuxi: { ...dto.yuxi, owner_id: owner.id, owner: ownerDto(owner) } } as AdminSessionDto;
}

/** A session's owner as the admin routes show it. */
export function ownerDto(owner: SessionOwner): SessionOwnerDto {
  return { kind: owner.kind, subject: owner.subject, app_id: owner.appId, name: owner.name };
}
