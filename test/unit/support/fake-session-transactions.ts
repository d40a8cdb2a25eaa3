import type { EntityManager } from 'typeorm';
import type { SqlFragment } from '#libs/database';
import type { OutgoingEvent } from '#libs/events';
import type { Committed, EmitOptions, Nudge, SessionTx } from '#libs/engine';
import { FakeDataSource } from './new-test-service.js';

/** What one session transaction was handed through its sinks. */
export interface RecordedTx {
  sessionId: string;
  manager: EntityManager;
  events: OutgoingEvent[];
  emitOptions: EmitOptions;
  nudges: Nudge[];
  writes: { fragment: SqlFragment; onRows?: (rows: Record<string, unknown>[]) => void }[];
  afterWrites: ((manager: EntityManager) => Promise<void>)[];
}

/**
 * SessionTransactions for orchestrator unit tests: runs a transition on a fake data source with a
 * tx that records what it emits, nudges and writes (the SQL is not run, nor read by the tests:
 * decisions, not statements). `rows` answers each write's RETURNING (to its `onRows`), by its
 * fragment's name; a write whose `onRows` throws rolls the transaction back, as the real one does.
 * `transaction` records what it would send after commit in `sent`.
 */
export class FakeSessionTransactions {
  readonly dataSource = new FakeDataSource();
  readonly txs: RecordedTx[] = [];
  readonly sent: Committed[] = [];
  rows: (fragment: SqlFragment, index: number) => Record<string, unknown>[] = () => [];

  async hold<T>(sessionId: string, fn: (tx: SessionTx) => Promise<T>): Promise<{ value: T; committed: Committed }> {
    return (await this.dataSource.transaction(async (manager: EntityManager) => {
      const recorded: RecordedTx = { sessionId, manager, events: [], emitOptions: {}, nudges: [], writes: [], afterWrites: [] };
      this.txs.push(recorded);
      const tx: SessionTx = {
        sessionId,
        manager,
        emit: (events, options = {}) => void (recorded.events.push(...events), (recorded.emitOptions = { ...recorded.emitOptions, ...options })),
        nudge: (...nudges) => void recorded.nudges.push(...nudges),
        write: (fragment, onRows) => void recorded.writes.push({ fragment, onRows }),
        afterWrite: (step) => void recorded.afterWrites.push(step),
      };
      const value = await fn(tx);
      recorded.writes.forEach(({ fragment, onRows }, index) => onRows?.(this.rows(fragment, index)));
      for (const step of recorded.afterWrites) await step(manager);
      return { value, committed: { batch: { sessionId, rows: [] }, nudges: recorded.nudges } };
    })) as { value: T; committed: Committed };
  }

  async transaction<T>(sessionId: string, fn: (tx: SessionTx) => Promise<T>): Promise<T> {
    const { value, committed } = await this.hold(sessionId, fn);
    this.sent.push(committed);
    return value;
  }

  /** The one transaction run so far (fails the test when there were more or none). */
  get only(): RecordedTx {
    if (this.txs.length !== 1) throw new Error(`expected one session transaction, ran ${this.txs.length}`);
    return this.txs[0]!;
  }
}

/** A session row as Postgres returns it (snake_case columns), from an entity. */
export function rowOf(entity: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(entity).map(([key, value]) => [key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value]));
}
