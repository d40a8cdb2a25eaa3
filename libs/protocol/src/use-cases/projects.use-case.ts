import { Injectable } from '@nestjs/common';
import { parseTtl } from '#libs/agents';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { listEnvelope, type PageQuery, unixSeconds } from '#libs/database';
import { type ProjectEntity, ProjectsRepository } from '#libs/engine';
import type { CreateProjectDto, ProjectDeletedDto, ProjectDto, ProjectListDto } from '../dto/project.dto.js';

export function toProjectDto(project: ProjectEntity): ProjectDto {
  return {
    id: project.id,
    object: 'agent.project',
    name: project.name,
    description: project.description,
    created_at: unixSeconds(project.createdAt),
    updated_at: unixSeconds(project.updatedAt),
    yuxi: { ttl: project.ttl },
  };
}

/** `POST /projects`: a project of the caller. */
@Injectable()
export class CreateProject {
  constructor(private readonly projects: ProjectsRepository) {}

  async execute(principal: Principal, dto: CreateProjectDto): Promise<ProjectDto> {
    const ttl = parseTtl(dto.yuxi?.ttl, 'yuxi.ttl');
    if (ttl.errors.length > 0) throw DomainError.validation(ttl.errors);
    return toProjectDto(await this.projects.create({ ownerId: principal.userId, name: dto.name, description: dto.description ?? '', ttl: ttl.ttl }));
  }
}

/** `GET /projects`: the caller's live projects, one page. */
@Injectable()
export class ListProjects {
  constructor(private readonly projects: ProjectsRepository) {}

  async execute(principal: Principal, page: PageQuery): Promise<ProjectListDto> {
    const { rows, hasMore } = await this.projects.list(principal.userId, page);
    const data = rows.map(toProjectDto);
    return listEnvelope(data, hasMore);
  }
}

/** `GET /projects/{id}`: a live project of the caller (404 otherwise). */
@Injectable()
export class GetProject {
  constructor(private readonly projects: ProjectsRepository) {}

  async execute(principal: Principal, projectId: string): Promise<ProjectDto> {
    return toProjectDto(await this.projects.getVisible(principal.userId, projectId));
  }
}

/**
 * `DELETE /projects/{id}`: a soft delete. The project is gone for its owner (404, off the list, no
 * new sessions, no new messages to its sessions: 409); its sessions keep their history and workdir,
 * and work accepted before (a preparation, a queued input, a running turn) still finishes.
 */
@Injectable()
export class DeleteProject {
  constructor(private readonly projects: ProjectsRepository) {}

  async execute(principal: Principal, projectId: string): Promise<ProjectDeletedDto> {
    await this.projects.softDelete(principal.userId, projectId);
    return { id: projectId, object: 'agent.project', deleted: true };
  }
}
