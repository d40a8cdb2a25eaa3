import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { type FileEntity, GetSessionFileContent, type SessionFileContent } from '#libs/files';
import { LineageRepository, SessionsRepository } from '#libs/engine';

/**
 * `GET …/sessions/{session_id}/files/{file_id}/content` as a fork sees it: its own files, and the
 * files of the history it inherits (its ancestors' inline images, tool images and attachments of
 * items up to the fork point, not later ones), even once an ancestor is deleted. The files lib knows nothing of lineage: it is given the ids.
 */
@Injectable()
export class ReadSessionFile {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly lineage: LineageRepository,
    private readonly content: GetSessionFileContent,
  ) {}

  async execute(principal: Principal, sessionId: string, fileId: string): Promise<SessionFileContent> {
    // A session's own file is read exactly as it always was (one statement); the lineage is looked
    // up only when that finds nothing, so sessions that are not forks pay nothing more.
    try {
      return await this.content.execute(principal, [sessionId], fileId);
    } catch (error) {
      if (!(error instanceof DomainError && error.code === 'not_found')) throw error;
      const session = await this.sessions.getVisible(principal.userId, sessionId);
      if (session.forkItemSeq === null) throw error;
      const ancestors = await this.lineage.segments(session.id);
      // An ancestor's file only as of the fork point: one its history up to the segment's bound
      // refers to (not one sent to the ancestor after the fork).
      const inherited = async (file: FileEntity): Promise<boolean> => {
        if (file.sessionId === session.id) return true;
        const segment = ancestors.find((candidate) => candidate.sessionId === file.sessionId);
        return segment !== undefined && this.lineage.referencedWithin(segment, file);
      };
      return this.content.execute(principal, [session.id, ...ancestors.map((segment) => segment.sessionId)], fileId, inherited);
    }
  }
}
