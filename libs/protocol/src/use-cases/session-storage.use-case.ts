import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
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
 * (its inherited history is its source's, counted there), and its workspace only once it committed
 * a version of its own (until then its head is its source's version).
 *
 * Cost: one heap fetch per row the session owns (100k items, 100k fetches), so the reads run one
 * after another on one connection, in one REPEATABLE READ transaction (one snapshot: the figures
 * agree with each other), under STORAGE_READ_TIMEOUT_MS: a huge session answers an error, never a
 * read that holds a connection for long.
 */
/** Per statement of the storage read (each table's sum is one statement): past it Postgres cancels the read. */
const STORAGE_READ_TIMEOUT_MS = 5000;

@Injectable()
export class GetSessionStorage {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly aggregate: SessionStorageReads,
    private readonly outbox: EventOutbox,
    private readonly files: FilesRepository,
    private readonly workspaces: WorkspacesRepository,
  ) {}

  async execute(principal: Principal, sessionId: string): Promise<SessionStorageDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    const { figures } = await this.measure(session.id, session.workdirId);
    return { object: 'yuxi.session.storage', session_id: session.id, ...figures, measured_at: Math.floor(Date.now() / 1000) };
  }

  /** The figures of one session (any owner's, deleted ones too), and the rows they count: the route's read, and the storage accounting's measurement. */
  async measure(sessionId: string, workdirId: string): Promise<{ figures: SessionStorageFigures; rows: number }> {
    const { rows, events, files, workspace } = await this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      await manager.query(`SET LOCAL statement_timeout = ${STORAGE_READ_TIMEOUT_MS}`);
      return {
        rows: await this.aggregate.rows(sessionId, manager),
        events: await this.outbox.storage(sessionId, manager),
        files: await this.files.storage(sessionId, manager),
        workspace: await this.workspaces.storage(workdirId, manager),
      };
    });
    // A project's workdir, or a tree member's (its root's): counted once, where it is the session's own.
    const shared = workdirId !== sessionId;
    const tables = [rows.items, events, rows.inputs, rows.turns, rows.runs, rows.steps, rows.model_requests];
    const own = workspace && !shared ? (workspace.inherited ? 0 : workspace.bytes) + workspace.versions.bytes : 0;
    const figures: SessionStorageFigures = {
      items: rows.items,
      events,
      inputs: rows.inputs,
      turns: rows.turns,
      runs: rows.runs,
      steps: rows.steps,
      model_requests: rows.model_requests,
      files,
      workspace: workspace ? { bytes: workspace.bytes, files: workspace.files, versions: workspace.versions, shared, inherited: workspace.inherited } : null,
      total_bytes: tables.reduce((sum, table) => sum + table.bytes, 0) + files.bytes + own,
    };
    return { figures, rows: tables.reduce((sum, table) => sum + table.rows, 0) + (workspace && !shared ? workspace.versions.rows : 0) };
  }
}

/** What `measure` reads: the route's figures. */
export type SessionStorageFigures = Omit<SessionStorageDto, 'object' | 'session_id' | 'measured_at'>;
