import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { composeLineage, ForkPoints, ForkWrites, IdempotencyService, type IdempotentResponse, ProjectsRepository, type SessionEntity, SessionsRepository, toSessionDto, turnEvents } from '#libs/engine';
import { WorkspaceForks } from '#libs/environments';
import { DomainError } from '#libs/errors';
import type { ForkSessionDto } from '../dto/fork-session.dto.js';
import { type Accepted, Acceptance } from './acceptance.js';

/**
 * `POST /sessions/{id}/fork`: a new root session of the same owner that shares the source's history
 * up to a turn by reference (its lineage), not by copying rows. The source is read, never locked:
 * everything a fork inherits (terminal turns and their items) is immutable, so a fork never waits
 * for the source's running turn. Written in one transaction: the session and lineage rows (one
 * statement), with an environment the workspace branched at the point, and the receipt with the
 * fork's `agent.session.created` riding on it. Its cost does not depend on the history's length.
 */
@Injectable()
export class ForkSession {
  /** The idempotency scope of a fork. */
  static readonly SCOPE = 'sessions.fork';

  constructor(
    private readonly acceptance: Acceptance,
    private readonly sessions: SessionsRepository,
    private readonly points: ForkPoints,
    private readonly writes: ForkWrites,
    private readonly workspaces: WorkspaceForks,
    private readonly projects: ProjectsRepository,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, sessionId: string, dto: ForkSessionDto, rawKey: string | undefined): Promise<IdempotentResponse> {
    const key = IdempotencyService.requireKey(rawKey);
    if (dto.after_turn_id !== undefined && dto.before_turn_id !== undefined) {
      throw DomainError.validation([{ field: 'before_turn_id', errors: ['give after_turn_id or before_turn_id, not both'] }]);
    }
    const intent = { operation: 'sessions.fork', session_id: sessionId, body: { ...dto } };
    return this.acceptance.accept(principal, ForkSession.SCOPE, key, intent, (manager) => this.fork(manager, principal, sessionId, dto));
  }

  private async fork(manager: EntityManager, principal: Principal, sessionId: string, dto: ForkSessionDto): Promise<Accepted> {
    // Another owner's session and a deleted one are not found; read without a lock (see above), on
    // the transaction's connection (a second one from the pool while holding this one starves it).
    const source = await this.sessions.getVisible(principal.userId, sessionId, false, manager);
    if (source.depth > 0) {
      throw new DomainError('state_conflict', 'This session is a member of a cooperation tree; fork the tree\'s root session', { root_session_id: source.rootSessionId });
    }
    // A fork is a new session of the source's project: a deleted project takes none (404, as a
    // create in it), share-locked until commit as a create does. Checked on project_id, not the
    // workdir: a fork with an environment has a workdir of its own, and so have its forks. (A
    // project_id that is a label from before projects existed names no project: nothing to check.)
    if (source.projectId !== null) await this.projects.requireLiveOrLabel(manager, principal.userId, source.projectId);
    const { point, sourceLineage } = await this.points.resolve(manager, source, { afterTurnId: dto.after_turn_id, beforeTurnId: dto.before_turn_id });
    const lineage = composeLineage({ id: source.id, forkItemSeq: source.forkItemSeq, forkTurnSeq: source.forkTurnSeq, lineage: sourceLineage }, point, this.config.forkMaxDepth);
    const id = newId();
    const workdirId = forkWorkdir(source, id);
    // With an environment the fork's workspace starts at the source's version as of the point (no
    // blob copied); none yet: the fork sets its workspace up on its first call, as a new session does.
    const baseVersionId =
      source.environment !== null && workdirId === id
        ? await this.workspaces.versionAsOf(manager, { workdirId: point.ownerWorkdirId, turnId: point.turnId, position: point.position })
        : null;
    const session = await this.writes.insertFork(manager, source, point, lineage, { id, title: dto.title ?? source.title, metadata: dto.metadata ?? source.metadata, workdirId });
    if (baseVersionId !== null) await this.workspaces.branch(manager, { workdirId: id, ownerId: session.ownerId, baseVersionId });
    const body = toSessionDto(session);
    // The fork's stream starts with the fork itself; nothing is sent on the source's.
    return { status: 201, body, sessionId: session.id, receipt: null, events: [turnEvents.sessionCreated(body)], nudges: [] };
  }
}

/**
 * A fork has a workspace of its own (writes in either never show in the other), except a fork of a
 * session sharing its project's workdir without an environment: it keeps seeing the project's files.
 */
function forkWorkdir(source: SessionEntity, forkId: string): string {
  return source.environment === null && source.workdirId !== source.id ? source.workdirId : forkId;
}
