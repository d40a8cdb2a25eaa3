import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { type RowStorage, rowStorageOf, rowStorageSql, type StorageQueryable } from '#libs/database';

/** The session's own rows in each table of the aggregate (SessionStorageReads.rows). */
export interface SessionRowStorage {
  items: RowStorage;
  inputs: RowStorage;
  turns: RowStorage;
  runs: RowStorage;
  steps: RowStorage;
  model_requests: RowStorage;
}

/**
 * What a session's rows of the aggregate's tables take, for `GET …/sessions/{id}/storage`. Its own
 * rows only: a fork's inherited history is its source's rows, counted there.
 */
@Injectable()
export class SessionStorageReads {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * One statement, each table read through an index on the session: items (session_id, seq),
   * inputs (session_id, received_seq), turns (session_id, seq), runs (session_id, epoch),
   * model_requests (session_id). Steps have no index on their session_id and are reached through
   * the session's turns (run_steps (turn_id, seq)): an index for this read alone would cost every
   * step's write.
   */
  async rows(sessionId: string, db: StorageQueryable = this.dataSource): Promise<SessionRowStorage> {
    // One after another: `db` may be a transaction's one connection, which runs one query at a time
    // (the column lists are read from the catalog once per process, then cached).
    const items = await rowStorageSql(db, 'items', 'FROM items t WHERE t.session_id = $1');
    const inputs = await rowStorageSql(db, 'inputs', 'FROM inputs t WHERE t.session_id = $1');
    const turns = await rowStorageSql(db, 'turns', 'FROM turns t WHERE t.session_id = $1');
    const runs = await rowStorageSql(db, 'runs', 'FROM runs t WHERE t.session_id = $1');
    const steps = await rowStorageSql(db, 'run_steps', 'FROM turns u JOIN run_steps t ON t.turn_id = u.id WHERE u.session_id = $1');
    const modelRequests = await rowStorageSql(db, 'model_requests', 'FROM model_requests t WHERE t.session_id = $1');
    const [row] = (await db.query(
      `SELECT ${items} AS items, ${inputs} AS inputs, ${turns} AS turns, ${runs} AS runs, ${steps} AS steps, ${modelRequests} AS model_requests`,
      [sessionId],
    )) as Record<keyof SessionRowStorage, unknown>[];
    return {
      items: rowStorageOf(row?.items),
      inputs: rowStorageOf(row?.inputs),
      turns: rowStorageOf(row?.turns),
      runs: rowStorageOf(row?.runs),
      steps: rowStorageOf(row?.steps),
      model_requests: rowStorageOf(row?.model_requests),
    };
  }
}
