import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { FilesRepository } from '#libs/files';
import { LineageRepository, type SessionEntity, SessionsRepository, TurnsRepository } from '#libs/engine';
import type { SessionDeletedDto } from '../dto/session.dto.js';
import { StorageUsageRepository } from '../storage/storage-usage.repository.js';

/**
 * `DELETE …/sessions/{id}`: a soft delete. The session and everything under it (turns, items,
 * inputs, files, its event stream) is not found afterwards; its files become tombstones in the
 * same transaction and the files sweep removes their bytes, unless a live fork still inherits
 * them (then they go with the last such fork). A root takes its cooperation tree
 * with it; a member alone is refused (409): it is part of its coordinator's work. Refused (409
 * `state_conflict`) while any session of the tree has an active turn or pending inputs, as an
 * archive is, so no worker ever works for a deleted session. Idempotent: deleting a deleted
 * session of the caller answers the same 200 until the retention task `deleted_sessions`
 * (libs/retention SessionPurge) purged its rows, SESSION_PURGE_AFTER_S later; then 404, as another
 * owner's is.
 */
@Injectable()
export class DeleteSession {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly files: FilesRepository,
    private readonly lineage: LineageRepository,
    private readonly storageUsage: StorageUsageRepository,
  ) {}

  async execute(principal: Principal, sessionId: string): Promise<SessionDeletedDto> {
    await this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      if (!session || session.ownerId !== principal.userId) throw DomainError.notFound(`Session ${sessionId}`);
      if (session.deletedAt !== null) return;
      await this.deleteLocked(manager, session);
    });
    return { id: sessionId, object: 'agent.session', deleted: true };
  }

  /**
   * Deletes a live session locked by the caller, with its tree (a root only), under every rule
   * above: refused (409 `state_conflict`, nothing written) while a session of the tree has an
   * active turn or pending inputs, and for a member. The API's delete and the session TTL's (the
   * retention sweep) both come here. Returns the ids of the sessions deleted.
   */
  async deleteLocked(manager: EntityManager, session: SessionEntity): Promise<string[]> {
    if (session.depth > 0) {
      throw new DomainError('state_conflict', 'This session is a member of a cooperation tree; delete the tree\'s root session, which deletes the whole tree', {
        root_session_id: session.rootSessionId,
      });
    }
    // Every session of the tree is locked (root first, level by level) before it is checked: no
    // input or claim lands between the check and the delete.
    const tree = await this.sessions.lockTree(manager, session.id);
    for (const member of tree) {
      if (member.deletedAt !== null) continue;
      if (await this.turns.activeTurn(manager, member.id)) {
        throw new DomainError('state_conflict', `Session ${member.id} has an active turn; cancel it or wait for it to finish before deleting`, { session_id: member.id });
      }
      if (member.pendingInputCount > 0) {
        throw new DomainError('state_conflict', `Session ${member.id} has pending inputs; cancel them or let them run before deleting`, {
          session_id: member.id,
          queued_input_count: member.pendingInputCount,
        });
      }
    }
    const deleted = await this.sessions.markTreeDeleted(manager, session.id);
    // A live fork still shows the deleted sessions' history it inherits, images and attachments
    // included: only the files of sessions no live session inherits from go (deleting the last
    // live fork releases its deleted ancestors' files too).
    await this.files.tombstoneSessionFiles(manager, await this.lineage.releasable(manager, deleted));
    // The storage accounting's next pass takes them out of the owner's totals (and so the quota's).
    await this.storageUsage.markDeleted(manager, deleted);
    return deleted;
  }
}
