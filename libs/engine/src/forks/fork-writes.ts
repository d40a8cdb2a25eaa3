import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { SessionEntity } from '../tables/session.entity.js';
import type { ForkFields, ForkPoint, LineageSegment } from './lineage.types.js';

@Injectable()
export class ForkWrites {
  /** One statement: the fork's session row (the source's configuration copied, counters at the point) and its lineage rows. */
  async insertFork(manager: EntityManager, source: SessionEntity, point: ForkPoint, lineage: LineageSegment[], fields: ForkFields): Promise<SessionEntity> {
    void manager;
    void source;
    void point;
    void lineage;
    void fields;
    throw new Error('ForkWrites.insertFork: not implemented');
  }
}
