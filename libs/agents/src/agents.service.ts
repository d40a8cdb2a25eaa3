import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { AppConfig } from '#libs/config';
import { unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { AgentDto, AgentListDto } from './agent.dto.js';
import { AgentEntity } from './agent.entity.js';

/** Saved agents: system agents (no owner) are visible to everyone, private ones to their owner only. */
@Injectable()
export class AgentsService {
  constructor(
    @InjectRepository(AgentEntity) private readonly agents: Repository<AgentEntity>,
    private readonly config: AppConfig,
  ) {}

  async list(userId: string): Promise<AgentListDto> {
    const rows = await this.agents.find({
      where: [{ ownerId: IsNull() }, { ownerId: userId }],
      order: { id: 'ASC' },
    });
    const data = rows.map((row) => this.toDto(row));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false };
  }

  /** The agent if the caller may use it; otherwise 404, whether it exists or not. */
  async getVisible(userId: string, agentId: string): Promise<AgentEntity> {
    const row = await this.agents.findOneBy({ id: agentId });
    if (!row || (row.ownerId !== null && row.ownerId !== userId)) throw DomainError.notFound(`Agent ${agentId}`);
    return row;
  }

  async getDto(userId: string, agentId: string): Promise<AgentDto> {
    return this.toDto(await this.getVisible(userId, agentId));
  }

  effectiveModel(agent: AgentEntity): string {
    return agent.model ?? this.config.defaultModel;
  }

  private toDto(row: AgentEntity): AgentDto {
    return {
      id: row.id,
      object: 'agent',
      name: row.name,
      description: row.description,
      model: this.effectiveModel(row),
      created_at: unixSeconds(row.createdAt),
      yuxi: { tool_approval_mode: row.toolApprovalMode, system: row.ownerId === null },
    };
  }
}
