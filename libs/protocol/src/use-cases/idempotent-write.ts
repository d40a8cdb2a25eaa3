import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { preparedUpTo } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { OutboxRow } from '#libs/events';
import { type IdempotencyScope, IdempotencyService, type IdempotentResponse, type RidingWrite, type WorkResult } from '#libs/engine';

/** Writes that run as CTEs of the receipt's statement and whose rows that statement answers (the outbox append). */
export interface AnsweringWrite {
  /** The CTEs (to follow WITH) and the query of their rows, parameters numbered from `first`. */
  fragment(first: number): { ctes: string; select: string; values: unknown[]; rows: number };
  /** The rows the query answered, once the receipt is inserted (before commit). */
  take(rows: OutboxRow[]): void;
}

/** What a transaction's work answered, and the writes it leaves to the receipt's statement. */
export interface TransactionWork extends WorkResult {
  /** Writes of the work that run with the receipt insert, in its statement (the accepted input's row). */
  riding?: RidingWrite[];
  answering?: AnsweringWrite;
}

class DuplicateKey extends Error {}

/**
 * Runs a write at most once per idempotency scope, in a transaction this class opens (the
 * idempotency lib only reads and writes receipts). A committed receipt answers a retry with one
 * read. Otherwise the work and the receipt (holding the exact response bytes) commit in one
 * transaction; the receipt insert is last, so a concurrent duplicate blocks on the unique index
 * until the first commits, then rolls its own work back and replays the first response.
 */
@Injectable()
export class IdempotentWrite {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly idempotency: IdempotencyService,
  ) {}

  /**
   * `prepare` runs only when no receipt answers the key, before the transaction: work that cannot
   * be part of it (blobs in file storage) and that a replay must not repeat. `looked`: the caller
   * already read the key and found no live receipt (its read answered nothing), so no second read.
   */
  async execute(
    scope: IdempotencyScope,
    work: (manager: EntityManager) => Promise<TransactionWork>,
    prepare?: () => Promise<void>,
    looked = false,
  ): Promise<IdempotentResponse> {
    const earlier = looked ? null : IdempotencyService.decide(await this.idempotency.lookup(scope), scope);
    if (earlier) return earlier;
    await prepare?.();
    try {
      return await this.dataSource.transaction((manager) => this.within(manager, scope, work));
    } catch (error) {
      // A retry that raced the first request (both found no receipt, the first committed while the
      // retry waited for the session lock) fails on the state the first one left (e.g. a waitpoint
      // already resumed): the first response is the answer, not that refusal.
      if (!(error instanceof DuplicateKey) && !(error instanceof DomainError)) throw error;
      const first = IdempotencyService.decide(await this.idempotency.lookup(scope), scope);
      if (!first) throw error;
      return first;
    }
  }

  /**
   * The work and its receipt in a transaction the caller holds (`execute`'s, or one that composes
   * this write with its own, e.g. an automation's invocation): the receipt's key must be new (no
   * lookup here); a receipt already there fails the whole transaction.
   */
  async within(manager: EntityManager, scope: IdempotencyScope, work: (manager: EntityManager) => Promise<TransactionWork>): Promise<IdempotentResponse> {
    const result = await work(manager);
    // The work's riding writes are CTEs of the receipt's statement: Postgres runs each exactly
    // once, whether or not the receipt is inserted, and a conflict rolls them back with the rest.
    const riding = result.riding ?? [];
    const ctes: string[] = [];
    let next = 1;
    for (const [i, write] of riding.entries()) {
      ctes.push(`w${i} AS (${write.sql(next)})`);
      next += write.values.length;
    }
    const answering = result.answering?.fragment(next);
    if (answering) {
      ctes.push(answering.ctes);
      next += answering.values.length;
    }
    const insert = this.idempotency.receiptInsert(scope, result, next, { takeover: true });
    const values = [...riding.flatMap((write) => write.values), ...(answering?.values ?? []), ...insert.values];
    // With answering writes, one row per row of theirs (one of nulls for none) when the receipt was inserted, no row when not.
    const sql = answering
      ? `WITH ${ctes.join(', ')}, acc_receipt AS (${insert.sql})
       SELECT e.seq, e.type, e.payload, e.epoch, e.fan_out FROM acc_receipt LEFT JOIN (${answering.select}) AS e ON true`
      : `${ctes.length > 0 ? `WITH ${ctes.join(', ')} ` : ''}${insert.sql}`;
    const inserted = (await manager.query(preparedUpTo(answering?.rows ?? 1, sql), values)) as OutboxRow[];
    if (inserted.length === 0) throw new DuplicateKey();
    result.answering?.take(inserted.filter((row) => row.seq !== null));
    return { status: result.status, body: insert.body, replayed: false, receipt: result.receipt, sessionId: result.sessionId };
  }
}
