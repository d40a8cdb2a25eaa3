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
   * The version of the workspace after `sessionId`'s last write at or before its turn `turnSeq`;
   * else its workspace's base (a fork that had not written yet: its inherited writes are its
   * ancestors' versions); null: no workspace yet at that point (the fork sets up its own).
   * Two index probes whatever the number of versions: `workspace_versions_author_idx` read
   * backwards from the bound, then the workspace's primary key. In a workdir shared by a tree or a
   * project the version also holds the others' writes committed before that write (an
   * approximation: versions record their author's turn, not the moment each turn ended).
   */
  async versionAsOf(manager: EntityManager, at: { sessionId: string; workdirId: string; turnSeq: number }): Promise<string | null> {
    const [row] = (await manager.query(
      prepared(`SELECT coalesce(
           (SELECT id FROM workspace_versions WHERE session_id = $1 AND turn_seq IS NOT NULL AND turn_seq <= $2 ORDER BY turn_seq DESC, seq DESC LIMIT 1),
           (SELECT base_version_id FROM workspaces WHERE workdir_id = $3)) AS version_id`),
      [at.sessionId, at.turnSeq, at.workdirId],
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
