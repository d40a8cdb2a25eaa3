import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { deleteRowsBatch, newId, prepared, type RowStorage, rowStorageOf, rowStorageSql, type StorageQueryable } from '#libs/database';
import { absoluteWorkspacePath } from './workspace-paths.js';
import { type Manifest, type ManifestChanges, manifestTotals, mergeOntoHead, SYMLINK_MODE } from './manifest.js';

/** A workspace's latest committed version. */
export interface WorkspaceHead {
  versionId: string;
  seq: number;
  manifest: Manifest;
}

export interface WorkspaceState {
  setupState: 'running' | 'done';
  head: WorkspaceHead | null;
  /** The workdir's attachments already copied into the workspace. */
  placedFileIds: string[];
}

/** What a workspace holds (WorkspacesRepository.storage). */
export interface WorkspaceStorage {
  /** The head version's files and their recorded bytes. */
  bytes: number;
  files: number;
  /** The workdir's own version rows. */
  versions: RowStorage;
  /** The head is the version a fork branched from: the source's files, counted there. */
  inherited: boolean;
}

/** Who made a version: the call (or the setup) whose writes it holds. */
export interface VersionAuthor {
  sessionId: string;
  turnId: string | null;
  callId: string | null;
}

export interface CommitRequest {
  workdirId: string;
  author: VersionAuthor;
  changes: ManifestChanges;
  /** The first version: the environment's files, the attachments and what setup left; ends the setup. */
  setupOutput?: string;
  /** Attachments this version copied into the workspace (recorded so that each is copied once). */
  placedFileIds?: string[];
  /** Whether the written files are the call's artifacts (not for what the setup or an attachment put there). */
  artifacts: boolean;
}

/**
 * The `workspaces`, `workspace_versions` and `session_artifacts` tables. A commit serialises on the
 * workspace's row (FOR UPDATE) and merges the call's changes onto whatever head it finds there, so
 * two sessions of a tree committing at once on two workers both keep their writes (per path, the
 * later commit wins).
 */
@Injectable()
export class WorkspacesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async state(workdirId: string): Promise<WorkspaceState | null> {
    const [row] = (await this.dataSource.query(
      prepared(`SELECT w.setup_state, w.placed_file_ids, v.id AS version_id, v.seq, v.manifest
         FROM workspaces w LEFT JOIN workspace_versions v ON v.id = w.head_version_id WHERE w.workdir_id = $1`),
      [workdirId],
    )) as { setup_state: 'running' | 'done'; placed_file_ids: string[]; version_id: string | null; seq: number | null; manifest: Manifest | null }[];
    if (!row) return null;
    return {
      setupState: row.setup_state,
      head: row.version_id ? { versionId: row.version_id, seq: row.seq!, manifest: row.manifest! } : null,
      placedFileIds: row.placed_file_ids,
    };
  }

  /**
   * What the workdir's workspace holds: its head version's files and their bytes as recorded at
   * commit (the manifest's sizes; blobs are stored once per content, so a version, a fork or
   * another workspace holding the same file shares its blob, and no blob is listed), and the
   * workdir's own version rows (manifests) with their bytes, by (workdir_id, seq). `inherited`: the
   * head is still the version a fork branched from (its source's files, counted there). Null: the
   * workdir has no workspace (no environment was used).
   */
  async storage(workdirId: string, db: StorageQueryable = this.dataSource): Promise<WorkspaceStorage | null> {
    const versions = await rowStorageSql(db, 'workspace_versions', 'FROM workspace_versions t WHERE t.workdir_id = $1');
    const [row] = (await db.query(
      `SELECT coalesce(v.bytes, 0)::float8 AS bytes, coalesce(v.files, 0) AS files, ${versions} AS versions,
         coalesce(w.head_version_id = w.base_version_id, false) AS inherited
         FROM workspaces w LEFT JOIN workspace_versions v ON v.id = w.head_version_id WHERE w.workdir_id = $1`,
      [workdirId],
    )) as { bytes: number; files: number; versions: unknown; inherited: boolean }[];
    return row ? { bytes: row.bytes, files: row.files, versions: rowStorageOf(row.versions), inherited: row.inherited } : null;
  }

  /**
   * The purge of deleted sessions (libs/retention SessionPurge), before the engine deletes their
   * turns: up to `limit` of their artifacts; the versions they committed to a workdir not their own
   * (a project's, or their tree's root's when the root is not in this purge) lose their author
   * (session and turn: the version stays the workdir's history); and the workspaces of their own
   * workdirs go with their versions (ON DELETE CASCADE: one statement per workspace, the versions'
   * bytes not counted). The blobs are content-addressed and shared with every other version holding
   * the same content: they stay. A fork's workspace goes with the fork, before its source can be
   * due (the source's versions are the fork's base until then).
   */
  async purgeSessions(sessionIds: string[], limit: number): Promise<RowStorage> {
    const artifacts = await deleteRowsBatch(this.dataSource, 'session_artifacts', 't.session_id = ANY($1::uuid[])', [sessionIds], limit);
    await this.dataSource.query(
      prepared(`UPDATE workspace_versions SET session_id = NULL, turn_id = NULL WHERE id IN (
         SELECT v.id FROM workspace_versions v WHERE v.session_id = ANY($1::uuid[]) AND v.workdir_id <> ALL($1::uuid[]) LIMIT $2 FOR UPDATE SKIP LOCKED)`),
      [sessionIds, limit],
    );
    const workspaces = await deleteRowsBatch(this.dataSource, 'workspaces', 't.workdir_id = ANY($1::uuid[])', [sessionIds], limit);
    return { rows: artifacts.rows + workspaces.rows, bytes: artifacts.bytes + workspaces.bytes };
  }

  /**
   * Claims making the workspace's first version: true for the one caller that inserted the row, or
   * that took over a setup whose claimer went quiet longer than `staleAfterS` (its worker died).
   */
  async claimSetup(workdirId: string, ownerId: string, staleAfterS: number): Promise<boolean> {
    const rows = (await this.dataSource.query(
      `INSERT INTO workspaces (workdir_id, owner_id, setup_state) VALUES ($1, $2, 'running')
       ON CONFLICT (workdir_id) DO UPDATE SET setup_claimed_at = now(), updated_at = now()
         WHERE workspaces.setup_state = 'running' AND workspaces.setup_claimed_at < now() - $3::int * interval '1 second'
       RETURNING workdir_id`,
      [workdirId, ownerId, staleAfterS],
    )) as unknown[];
    return rows.length === 1;
  }

  /** Gives up a setup claim whose setup failed: the next call takes it over at once. */
  async releaseSetup(workdirId: string): Promise<void> {
    await this.dataSource.query(`UPDATE workspaces SET setup_claimed_at = '-infinity' WHERE workdir_id = $1 AND setup_state = 'running'`, [workdirId]);
  }

  async version(versionId: string): Promise<WorkspaceHead | null> {
    const [row] = (await this.dataSource.query(prepared(`SELECT id, seq, manifest FROM workspace_versions WHERE id = $1`), [versionId])) as { id: string; seq: number; manifest: Manifest }[];
    return row ? { versionId: row.id, seq: row.seq, manifest: row.manifest } : null;
  }

  /**
   * Commits a call's changes as a new version on top of the current head, and an artifact for each
   * regular file the call wrote, in one transaction. Returns the new head.
   */
  async commit(request: CommitRequest): Promise<WorkspaceHead> {
    return this.dataSource.transaction(async (manager) => {
      // The lock first, the head's version after: a join locked FOR UPDATE would be rechecked
      // against the moved head with the old version row (READ COMMITTED) and read no version.
      const [locked] = (await manager.query(prepared(`SELECT head_version_id FROM workspaces WHERE workdir_id = $1 FOR UPDATE`), [request.workdirId])) as {
        head_version_id: string | null;
      }[];
      if (!locked) throw new Error(`workspace ${request.workdirId} does not exist`);
      const [head] = locked.head_version_id
        ? ((await manager.query(prepared(`SELECT seq, manifest FROM workspace_versions WHERE id = $1`), [locked.head_version_id])) as { seq: number; manifest: Manifest }[])
        : [];
      const manifest = mergeOntoHead(head?.manifest ?? {}, request.changes);
      const totals = manifestTotals(manifest);
      const id = newId();
      const seq = (head?.seq ?? 0) + 1;
      const { sessionId, turnId, callId } = request.author;
      // The head may be another workdir's version (a fork's base): the seq goes on from it, the parent is it.
      // created_at is the clock once the lock is held, not the transaction's start: a workdir's
      // versions are then in the same order by time as by seq (a fork finds the version as of a
      // turn's end by time, see WorkspaceForks.versionAsOf).
      await manager.query(
        prepared(`INSERT INTO workspace_versions (id, workdir_id, seq, parent_id, manifest, files, bytes, session_id, turn_id, call_id, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, clock_timestamp())`),
        [id, request.workdirId, seq, locked.head_version_id, JSON.stringify(manifest), totals.files, totals.bytes, sessionId, turnId, callId],
      );
      const setup = request.setupOutput !== undefined;
      await manager.query(
        prepared(`UPDATE workspaces SET head_version_id = $2, updated_at = now(),
             setup_state = CASE WHEN $3 THEN 'done' ELSE setup_state END, setup_output = CASE WHEN $3 THEN $4 ELSE setup_output END,
             placed_file_ids = placed_file_ids || $5::text[]
           WHERE workdir_id = $1`),
        [request.workdirId, id, setup, request.setupOutput ?? null, request.placedFileIds ?? []],
      );
      if (request.artifacts) await this.insertArtifacts(manager, request, id);
      return { versionId: id, seq, manifest };
    });
  }

  private async insertArtifacts(manager: EntityManager, request: CommitRequest, versionId: string): Promise<void> {
    const written = Object.entries(request.changes.written).filter(([, [, , mode]]) => mode !== SYMLINK_MODE);
    if (written.length === 0) return;
    // One statement whatever the count: unnest of parallel arrays. A path the turn already wrote
    // keeps its one artifact, now holding the latest content.
    await manager.query(
      `INSERT INTO session_artifacts (id, session_id, workdir_id, version_id, path, sha256, size_bytes, turn_id)
       SELECT unnest($1::uuid[]), $2, $3, $4, unnest($5::text[]), unnest($6::text[]), unnest($7::bigint[]), $8
       ON CONFLICT (session_id, turn_id, path) WHERE deleted_at IS NULL
         DO UPDATE SET version_id = EXCLUDED.version_id, sha256 = EXCLUDED.sha256, size_bytes = EXCLUDED.size_bytes`,
      [
        written.map(() => newId()),
        request.author.sessionId,
        request.workdirId,
        versionId,
        written.map(([path]) => absoluteWorkspacePath(path)),
        written.map(([, [sha]]) => sha),
        written.map(([, [, size]]) => size),
        request.author.turnId,
      ],
    );
  }
}
