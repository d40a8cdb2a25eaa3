import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/**
 * A fork's workspace: it starts at the version its source's workspace had at the fork point and
 * branches from there. Versions are content-addressed manifests over shared blobs, so a fork copies
 * no blob: its first commit makes a version of its own workdir whose parent is the source's.
 */
@Injectable()
export class WorkspaceForks {
  /** The version of the workspace after `sessionId`'s last write at or before its turn `turnSeq` (or its workspace's base); null: none yet. */
  async versionAsOf(manager: EntityManager, at: { sessionId: string; workdirId: string; turnSeq: number }): Promise<string | null> {
    void manager;
    void at;
    throw new Error('WorkspaceForks.versionAsOf: not implemented');
  }

  /** The fork's workspace, starting at `baseVersionId` (setup done, nothing copied). */
  async branch(manager: EntityManager, fork: { workdirId: string; ownerId: string; baseVersionId: string }): Promise<void> {
    void manager;
    void fork;
    throw new Error('WorkspaceForks.branch: not implemented');
  }
}

/** Forks' workspaces for the api (the fork route branches them; no sandbox needed). */
@Module({ providers: [WorkspaceForks], exports: [WorkspaceForks] })
export class WorkspaceForksModule {}
