import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { CreateProject, CreateProjectDto, DeleteProject, GetProject, ListProjects, ListQueryDto, ProjectDeletedDto, ProjectDto, ProjectListDto, ProjectStorageDto, StorageTotals } from '#libs/protocol';
import { CREATE_PROJECT_EXAMPLE, PROJECT_DELETED_EXAMPLE, PROJECT_EXAMPLE, PROJECT_LIST_EXAMPLE, PROJECT_STORAGE_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const ApiProjectId = () =>
  ApiParam({ name: 'project_id', description: 'A project of the caller (another caller\'s, and a deleted one, answer 404).', schema: { type: 'string', format: 'uuid' } });

/** Projects: a caller's named groups of sessions sharing one workdir. Registered before AgentsController (`/agents/projects` is no agent). */
@ApiTags(TAGS.projects.name)
@ApiBearerAuth()
@Controller('api/v1/agents/projects')
export class ProjectsController {
  constructor(
    private readonly createProject: CreateProject,
    private readonly listProjects: ListProjects,
    private readonly getProject: GetProject,
    private readonly deleteProject: DeleteProject,
    private readonly storageTotals: StorageTotals,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'createProject',
    summary: 'Create a project',
    description:
      'A project of the caller. Sessions created with its id as `project_id` share its workdir: a file attached in one of them is listed and read by the file tools (`list_files`, `read_file`) in every session of the project. Each session keeps its own attachment list.',
  })
  @ApiBody({ type: CreateProjectDto, examples: { project: { value: CREATE_PROJECT_EXAMPLE } } })
  @ApiCreatedResponse({ type: ProjectDto, description: 'The project.', example: PROJECT_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_json')
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateProjectDto): Promise<ProjectDto> {
    return this.createProject.execute(principal, body);
  }

  @Get()
  @ApiOperation({
    operationId: 'listProjects',
    summary: 'List projects',
    description: 'The caller\'s projects (deleted ones excluded) in a stable (created_at, id) order, newest first by default; pass the previous page\'s `last_id` as `after` for the next one.',
  })
  @ApiOkResponse({ type: ProjectListDto, description: 'One page of projects.', example: PROJECT_LIST_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_cursor')
  list(@CurrentPrincipal() principal: Principal, @Query() query: ListQueryDto): Promise<ProjectListDto> {
    return this.listProjects.execute(principal, { after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }

  @Get(':project_id/storage')
  @ApiOperation({
    operationId: 'getProjectStorage',
    summary: 'Get what a project\'s sessions store',
    description:
      'The bytes and rows the project\'s sessions store (deleted ones until they are purged), summed from each session\'s storage as the worker last measured it: a session is measured again after its activity, so the figures lag by up to the storage accounting interval (RETENTION_SWEEP_MS); `measured_at` says how recent they are. Zeros before the first measurement. Another caller\'s project, or a deleted one, is 404.',
  })
  @ApiProjectId()
  @ApiOkResponse({ type: ProjectStorageDto, description: 'The project\'s storage.', example: PROJECT_STORAGE_EXAMPLE })
  @ApiErrors('not_found')
  storage(@CurrentPrincipal() principal: Principal, @Param('project_id') projectId: string): Promise<ProjectStorageDto> {
    return this.storageTotals.project(principal, projectId);
  }

  @Get(':project_id')
  @ApiOperation({ operationId: 'getProject', summary: 'Get a project', description: 'One project of the caller.' })
  @ApiProjectId()
  @ApiOkResponse({ type: ProjectDto, description: 'The project.', example: PROJECT_EXAMPLE })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('project_id') projectId: string): Promise<ProjectDto> {
    return this.getProject.execute(principal, projectId);
  }

  @Delete(':project_id')
  @ApiOperation({
    operationId: 'deleteProject',
    summary: 'Delete a project',
    description:
      'A soft delete: the project is gone for the caller (404 on read and on a session create naming it, off the list), and its sessions take no new messages (409 `state_conflict`). Their history and files stay readable, and work accepted before the delete still finishes: attachment preparations, queued inputs, running turns.',
  })
  @ApiProjectId()
  @ApiOkResponse({ type: ProjectDeletedDto, description: 'Deleted.', example: PROJECT_DELETED_EXAMPLE })
  @ApiErrors('not_found')
  delete(@CurrentPrincipal() principal: Principal, @Param('project_id') projectId: string): Promise<ProjectDeletedDto> {
    return this.deleteProject.execute(principal, projectId);
  }
}
