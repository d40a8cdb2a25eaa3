import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { LineageSegment } from '../forks/lineage.types.js';

/** The `session_lineage` table: a fork's ancestors and the bounds of what it inherits from each. */
@Injectable()
export class LineageRepository {
  /** The session's ancestors, nearest first; [] for a session that is not a fork. */
  async segments(sessionId: string, manager?: EntityManager): Promise<LineageSegment[]> {
    void sessionId;
    void manager;
    throw new Error('LineageRepository.segments: not implemented');
  }

  /** Of these deleted sessions and their deleted ancestors, those no live session inherits from (their files may go). */
  async releasable(manager: EntityManager, deletedIds: string[]): Promise<string[]> {
    void manager;
    void deletedIds;
    throw new Error('LineageRepository.releasable: not implemented');
  }
}
