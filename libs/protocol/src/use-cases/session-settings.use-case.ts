import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { assertApprovalMode, assertModelOverride, type EffectiveTtl, parseTtl, resolveSessionTtl } from '#libs/agents';
import type { Principal } from '#libs/auth';
import { readSessionBudgets, sessionBudgetView, writeSessionBudget } from '#libs/budgets';
import { ProjectsRepository, SessionControls, SessionsRepository, toSessionDto } from '#libs/engine';
import { DomainError } from '#libs/errors';
import { ModelRegistry } from '#libs/models';
import type { SessionDto } from '../dto/session.dto.js';
import type { UpdateSessionDto } from '../dto/update-session.dto.js';
import { chosenMetadata } from '../session-metadata.js';
import { budgetViewerOf } from './budgets.use-case.js';

/** Presentation and default configuration of a session; model and approval mode affect later inputs only. */
@Injectable()
export class UpdateSession {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly models: ModelRegistry,
    private readonly projects: ProjectsRepository,
  ) {}

  /** `ifMatch`: the revision the caller last read (parsed from `If-Match`); a stale one is 412. */
  async execute(principal: Principal, sessionId: string, dto: UpdateSessionDto, ifMatch?: number): Promise<SessionDto> {
    const model = dto.agent?.model === undefined ? undefined : this.models.validate(dto.agent.model);
    const mode = dto.yuxi?.tool_approval_mode;
    if (model !== undefined || mode !== undefined) {
      // The agent's policy is in the session's snapshot, which never changes: read it once, before the update.
      const current = await this.sessions.getVisible(principal.userId, sessionId);
      if (model !== undefined) assertModelOverride(principal, current.agentSnapshot?.policy, current.model, model, 'agent.model');
      if (mode !== undefined) assertApprovalMode(principal, current.agentSnapshot?.policy, mode, 'yuxi.tool_approval_mode');
    }
    const ttl = dto.yuxi?.ttl === undefined ? undefined : await this.resolveTtl(principal, sessionId, dto.yuxi.ttl);
    const budgetParam = dto.yuxi?.budget;
    const patch = {
      title: dto.yuxi?.title,
      isPinned: dto.yuxi?.is_pinned,
      unread: dto.yuxi?.unread,
      toolApprovalMode: dto.yuxi?.tool_approval_mode,
      compactionMode: dto.yuxi?.compaction_mode,
      metadata: chosenMetadata(dto.metadata, dto.yuxi?.metadata),
      model,
      ttl,
      // yuxi.budget is part of the session resource: changing it alone is an update like any other.
      touched: budgetParam !== undefined,
    };
    // The session's fields and its budget change together or not at all (a stale If-Match refuses both).
    const { session, budget } = await this.dataSource.transaction(async (manager) => {
      const updated = await this.sessions.update(principal.userId, sessionId, patch, ifMatch, manager);
      if (budgetParam === undefined) return { session: updated, budget: (await readSessionBudgets(manager, [updated.id])).get(updated.id) ?? null };
      const owner = { id: updated.id, accountId: budgetViewerOf(principal).accountId, createdBy: principal.actorId, appId: principal.appId };
      return { session: updated, budget: await writeSessionBudget(manager, owner, budgetParam === null ? null : { limits: { ...budgetParam.limits }, onExceeded: budgetParam.on_exceeded ?? 'pause' }) };
    });
    const view = toSessionDto(session);
    view.yuxi.budget = budget ? sessionBudgetView(budget) : null;
    return view;
  }

  /**
   * The TTL a session goes by once its own is `own` (null: none of its own): resolved again within
   * the bounds it was created under, its agent's as its snapshot keeps it (editing the agent later
   * changes no session) and its project's. A member's is refused: members follow their root.
   */
  private async resolveTtl(principal: Principal, sessionId: string, own: unknown): Promise<EffectiveTtl> {
    const parsed = parseTtl(own, 'yuxi.ttl');
    if (parsed.errors.length > 0) throw DomainError.validation(parsed.errors);
    const current = await this.sessions.getVisible(principal.userId, sessionId);
    if (current.depth > 0) throw DomainError.validation([{ field: 'yuxi.ttl', errors: ['a cooperation member follows its root session: set the TTL there'] }]);
    const project = current.projectId === null ? null : await this.projects.ttlOf(this.dataSource.manager, current.projectId);
    const resolved = resolveSessionTtl({ own: parsed.ttl, project, agent: current.agentSnapshot?.ttl }, 'yuxi.ttl');
    if (resolved.errors.length > 0) throw DomainError.validation(resolved.errors);
    return resolved.ttl;
  }
}

/** Archives when nothing is running or queued (the turns table decides); history stays readable. */
@Injectable()
export class ArchiveSession {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly controls: SessionControls,
  ) {}

  async execute(principal: Principal, sessionId: string): Promise<SessionDto> {
    const session = await this.dataSource.transaction(async (manager) => {
      const locked = await this.sessions.lockVisible(manager, principal.userId, sessionId);
      return this.controls.archive(manager, locked);
    });
    return toSessionDto(session);
  }
}
