import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { SessionEntity } from '../tables/session.entity.js';
import type { BasedSegment, ForkAsk, ForkPoint } from './lineage.types.js';

@Injectable()
export class ForkPoints {
  /**
   * The fork point and the source's lineage (each ancestor with its base), in one statement.
   * DomainError not_found (a turn the source does not show) / state_conflict (not finished, nothing finished yet).
   */
  async resolve(manager: EntityManager, source: SessionEntity, ask: ForkAsk): Promise<{ point: ForkPoint; sourceLineage: BasedSegment[] }> {
    void manager;
    void source;
    void ask;
    throw new Error('ForkPoints.resolve: not implemented');
  }
}
