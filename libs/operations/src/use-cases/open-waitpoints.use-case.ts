import { Injectable } from '@nestjs/common';
import type { PageQuery } from '#libs/database';
import { type OpenWaitpointFilter, sessionOwnerOf, TurnsRepository } from '#libs/engine';
import { ownerDto } from '#libs/protocol';
import type { OpenWaitpointDto, OpenWaitpointListDto } from '../dto/waitpoint-inbox.dto.js';

/** The operators' inbox: waitpoints still open across every owner's sessions, one statement a page. */
@Injectable()
export class ListOpenWaitpoints {
  constructor(private readonly turns: TurnsRepository) {}

  async execute(filter: OpenWaitpointFilter, page: PageQuery): Promise<OpenWaitpointListDto> {
    const { rows, hasMore } = await this.turns.openWaitpoints(filter, page);
    const data = rows.map(({ waitpoint, ...row }): OpenWaitpointDto => ({
      id: waitpoint.id,
      object: 'admin.waitpoint',
      kind: waitpoint.kind,
      status: 'open',
      session_id: row.sessionId,
      owner_id: row.ownerId,
      owner: ownerDto(sessionOwnerOf({ id: row.ownerId, ...row.owner })),
      agent_id: row.agentId,
      turn_id: row.turnId,
      run_id: waitpoint.run_id,
      ...(waitpoint.questions ? { questions: waitpoint.questions } : {}),
      ...(waitpoint.tool_calls ? { tool_calls: waitpoint.tool_calls } : {}),
      ...(waitpoint.kind === 'budget' ? { budget_id: waitpoint.budget_id, limit: waitpoint.limit, spent: waitpoint.spent } : {}),
      created_at: waitpoint.created_at,
    }));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
  }
}
