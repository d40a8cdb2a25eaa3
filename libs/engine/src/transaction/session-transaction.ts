import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { composeFragments, preparedUpTo, type SqlFragment } from '#libs/database';
import { type AppendOptions, EventOutbox, type OutboxBatch, type OutgoingEvent } from '#libs/events';
import { AfterCommit, type Committed, type Nudge } from './after-commit.js';

/** How events are appended: `epochSql` where the fencing epoch is computed by a fragment of the same statement (a run it inserts). */
export type EmitOptions = AppendOptions & { epochSql?: string };

/**
 * What a transition of one session is given: the transaction's manager for what it must read under
 * the lock (its own statements), and sinks for what it writes. Writes and events are buffered and
 * go to Postgres as ONE statement when the transition returns; nudges are sent after commit.
 */
export interface SessionTx {
  readonly sessionId: string;
  readonly manager: EntityManager;
  /** Events to append to the session's outbox, in order, in the same statement as the writes. */
  emit(events: OutgoingEvent[], options?: EmitOptions): void;
  /** What the worker side is asked to do once the transaction is durable. */
  nudge(...nudges: Nudge[]): void;
  /** A data-modifying statement to compose into the one write; `onRows` gets its RETURNING rows (as JSON) before commit, and may throw to roll back. */
  write(fragment: SqlFragment, onRows?: (rows: Record<string, unknown>[]) => void): void;
  /** A statement that must follow the write (it reads or references its rows), in the same transaction. */
  afterWrite(step: (manager: EntityManager) => Promise<void>): void;
}

class BufferedTx implements SessionTx {
  readonly fragments: { fragment: SqlFragment; onRows?: (rows: Record<string, unknown>[]) => void }[] = [];
  readonly events: OutgoingEvent[] = [];
  readonly nudges: Nudge[] = [];
  readonly steps: ((manager: EntityManager) => Promise<void>)[] = [];
  options: EmitOptions = {};

  constructor(
    readonly sessionId: string,
    readonly manager: EntityManager,
  ) {}

  emit(events: OutgoingEvent[], options: EmitOptions = {}): void {
    this.events.push(...events);
    this.options = { ...this.options, ...options };
  }

  nudge(...nudges: Nudge[]): void {
    this.nudges.push(...nudges);
  }

  write(fragment: SqlFragment, onRows?: (rows: Record<string, unknown>[]) => void): void {
    this.fragments.push({ fragment, onRows });
  }

  afterWrite(step: (manager: EntityManager) => Promise<void>): void {
    this.steps.push(step);
  }
}

/**
 * The one way a transition of a session commits (Vendure's "events only after commit"): `fn` reads
 * what it needs under the lock it takes, and hands its writes, events and nudges to the sinks; the
 * buffered writes and the outbox append (with its webhook deliveries) then go as one statement,
 * the transaction commits, and the batch is published and the nudges sent — by this class, so no
 * caller carries a batch out. A transition with nothing to read under a lock runs with
 * `{ transaction: false }`: its one statement is its own transaction (no START, no COMMIT).
 */
@Injectable()
export class SessionTransactions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
  ) {}

  /** Runs `fn`, writes and commits what it buffered, then publishes its events and sends its nudges. */
  async transaction<T>(sessionId: string, fn: (tx: SessionTx) => Promise<T>, options: { transaction?: boolean } = {}): Promise<T> {
    const { value, committed } = await this.hold(sessionId, fn, options);
    await this.afterCommit.send(committed);
    return value;
  }

  /**
   * As `transaction`, but what was committed is returned for the caller to send (AfterCommit.send):
   * for a caller that orders its own later publishing after this batch (a claimed run's live events).
   */
  async hold<T>(sessionId: string, fn: (tx: SessionTx) => Promise<T>, options: { transaction?: boolean } = {}): Promise<{ value: T; committed: Committed }> {
    const body = async (manager: EntityManager): Promise<{ value: T; committed: Committed }> => {
      const tx = new BufferedTx(sessionId, manager);
      const value = await fn(tx);
      const batch = await this.write(tx);
      for (const step of tx.steps) await step(manager);
      return { value, committed: { batch, nudges: tx.nudges } };
    };
    return options.transaction === false ? body(this.dataSource.manager) : this.dataSource.transaction(body);
  }

  /** The buffered writes and the outbox append as one statement. */
  private async write(tx: BufferedTx): Promise<OutboxBatch> {
    const out = this.outbox.appendWrite(tx.sessionId, tx.events, tx.options);
    if (!out && tx.fragments.length === 0) return { sessionId: tx.sessionId, rows: [] };
    const composed = composeFragments(
      tx.fragments.map((f) => f.fragment),
      {
        ctes: out?.ctes ?? [],
        params: out?.params ?? [],
        select: (names) =>
          `SELECT ${[
            out ? `(SELECT json_agg(json_build_array(seq, type, payload, epoch)) FROM ${out.rowsCte}) AS events` : 'NULL::json AS events',
            `${out?.fanOut ?? 'NULL::json'} AS fan_out`,
            ...names.flatMap((name, i) => (tx.fragments[i]?.onRows ? [`(SELECT json_agg(${name}) FROM ${name}) AS ${name}`] : [])),
          ].join(', ')}`,
      },
    );
    const size = (out?.size ?? 0) + tx.fragments.reduce((n, f) => n + (f.fragment.rows ?? 1), 0);
    const [row] = (await tx.manager.query(preparedUpTo(size, composed.sql), composed.params)) as Record<string, unknown>[];
    composed.names.forEach((name, i) => tx.fragments[i]?.onRows?.((row?.[name] as Record<string, unknown>[] | null) ?? []));
    const events = ((row?.events as [number, string, string, number | null][] | null) ?? []).map(([seq, type, payload, epoch]) => ({ seq, type, payload, epoch }));
    return out ? out.batch(events, (row?.fan_out as Record<string, unknown> | null) ?? null) : { sessionId: tx.sessionId, rows: [] };
  }
}
