import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { SessionsRepository, SessionStorageReads } from '#libs/engine';
import { WorkspacesRepository } from '#libs/environments';
import { EventOutbox } from '#libs/events';
import { FilesRepository } from '#libs/files';
import type { SessionStorageDto } from '../dto/session-storage.dto.js';

/**
 * `GET …/sessions/{id}/storage`: what the session keeps, table by table, with its files and
 * workspace; another owner's session is 404. Each library counts its own tables (the engine the
 * aggregate's, events the outbox, files the files, environments the workspace), every read by an
 * index on the session or its workdir: rows are summed as stored, files and the workspace by the
 * sizes recorded when they were stored, never by listing blobs. A fork counts its own rows only
 * (its inherited history is its source's, counted there).
 */
@Injectable()
export class GetSessionStorage {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly aggregate: SessionStorageReads,
    private readonly outbox: EventOutbox,
    private readonly files: FilesRepository,
    private readonly workspaces: WorkspacesRepository,
  ) {}

  async execute(principal: Principal, sessionId: string): Promise<SessionStorageDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    const [rows, events, files, workspace] = await Promise.all([
      this.aggregate.rows(session.id),
      this.outbox.storage(session.id),
      this.files.storage(session.id),
      this.workspaces.storage(session.workdirId),
    ]);
    // A project's workdir, or a tree member's (its root's): counted once, where it is the session's own.
    const shared = session.workdirId !== session.id;
    const tables = [rows.items, events, rows.inputs, rows.turns, rows.runs, rows.steps, rows.model_requests];
    const own = workspace && !shared ? workspace.bytes + workspace.versions.bytes : 0;
    return {
      object: 'yuxi.session.storage',
      session_id: session.id,
      items: rows.items,
      events,
      inputs: rows.inputs,
      turns: rows.turns,
      runs: rows.runs,
      steps: rows.steps,
      model_requests: rows.model_requests,
      files,
      workspace: workspace ? { ...workspace, shared } : null,
      total_bytes: tables.reduce((sum, table) => sum + table.bytes, 0) + files.bytes + own,
      measured_at: Math.floor(Date.now() / 1000),
    };
  }
}
