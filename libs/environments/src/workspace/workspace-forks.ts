import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { prepared } from '#libs/database';

/**
 * A fork's workspace: it starts at the version its source's workspace had at the fork point and
 * branches from there. Versions are content-addressed manifests over shared blobs, so a fork copies
 * no blob: its first commit makes a version of its own workdir whose parent is the source's.
 */
@Injectable()
export class WorkspaceForks {
  /**
   * The workspace of `workdirId` as of a fork point: its latest version committed before the
   * point's turn ended (`after`) or started (`before`), whoever wrote it (the session, the members
   * of its tree, the other sessions of its project share the workdir); else the workspace's base
   * (a fork that had not written yet: its inherited writes are its ancestors' versions); null: no
   * workspace yet at that point (the fork sets up its own). One statement of three index probes
   * whatever the number of versions: the turn by its key, then `workspace_versions_asof_idx` read
   * backwards from the turn's time, then the workspace by its key.
   *
   * A version's time is the database's clock once the workspace is locked (so by time is by seq);
   * a turn's are the worker's that ran it. The point's own turn is therefore matched by id, never by
   * time: its versions are all in (`after`) or all out (`before`) whatever the clocks say. Others'
   * writes go by time: the hosts' clocks are assumed to agree to well within a model call, which
   * always lies between a turn's last write and its end. The end is taken to the end of its
   * millisecond (a turn's times are kept to the millisecond, a version's finer). One more probe:
   * the point's turn's latest version on `workspace_versions_turn_idx`.
   */
  async versionAsOf(manager: EntityManager, at: { workdirId: string; turnId: string; position: 'after' | 'before' }): Promise<string | null> {
    const [row] = (await manager.query(
      prepared(`SELECT coalesce(
           (SELECT v.id FROM (
              (SELECT id, seq FROM workspace_versions
                WHERE workdir_id = $1 AND turn_id IS DISTINCT FROM $2
                  AND created_at < (SELECT CASE WHEN $3::text = 'after' THEN completed_at + interval '1 millisecond' ELSE started_at END FROM turns WHERE id = $2)
                ORDER BY created_at DESC, seq DESC LIMIT 1)
              UNION ALL
              (SELECT id, seq FROM workspace_versions WHERE $3::text = 'after' AND turn_id = $2 AND workdir_id = $1 ORDER BY seq DESC LIMIT 1)) v
             ORDER BY v.seq DESC LIMIT 1),
           (SELECT base_version_id FROM workspaces WHERE workdir_id = $1)) AS version_id`),
      [at.workdirId, at.turnId, at.position],
    )) as { version_id: string | null }[];
    return row?.version_id ?? null;
  }

  /**
   * The fork's workspace, starting at `baseVersionId`: head and base are that version, the setup is
   * done (the version holds what the source's setup made), nothing is copied. Its first call opens
   * its checkout at that head; its first commit is the base's seq + 1 with the base as parent.
   */
  async branch(manager: EntityManager, fork: { workdirId: string; ownerId: string; baseVersionId: string }): Promise<void> {
    await manager.query(
      prepared(`INSERT INTO workspaces (workdir_id, owner_id, head_version_id, base_version_id, setup_state, placed_file_ids)
         VALUES ($1, $2, $3, $3, 'done', '{}')`),
      [fork.workdirId, fork.ownerId, fork.baseVersionId],
    );
  }
}

/** Forks' workspaces for the api (the fork route branches them; no sandbox needed). */
@Module({ providers: [WorkspaceForks], exports: [WorkspaceForks] })
export class WorkspaceForksModule {}
