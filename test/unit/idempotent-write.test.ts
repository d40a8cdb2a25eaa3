import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import type { OutboxRow } from '#libs/events';
import { type IdempotencyScope, IdempotencyService, type ReceiptRow } from '#libs/engine';
import { IdempotentWrite } from '#libs/protocol';

// The transaction owner of an idempotent write, the database faked: the idempotency lib only reads
// the key and builds the receipt insert; the work's outbox rows ride in the receipt's statement.

const scope: IdempotencyScope = { ownerId: 'o', scope: 'session:s:events', key: 'k', requestHash: 'h' };
const live = (hash = 'h'): Partial<ReceiptRow> => ({ request_hash: hash, response_status: 202, response_body: '{"first":true}', receipt: null, session_id: 's', session_deleted: false, expired: false });

let statements: string[];
let answers: unknown[][];
let receipt: Partial<ReceiptRow> | null;
let transactions: number;
let write: IdempotentWrite;

beforeEach(() => {
  statements = [];
  answers = [];
  receipt = null;
  transactions = 0;
  const manager = { query: async (sql: unknown) => (statements.push(String(sql)), answers.shift() ?? []) };
  const dataSource = { transaction: async (work: (m: unknown) => Promise<unknown>) => (transactions++, work(manager)) } as unknown as DataSource;
  const receipts = { query: async (sql: unknown) => (statements.push(String(sql)), receipt ? [receipt] : []) };
  write = new IdempotentWrite(dataSource, new IdempotencyService(dataSource, receipts as never, { idempotencyTtlHours: 24 } as AppConfig));
});

const work = (taken: OutboxRow[][]) => async () => ({
  status: 202,
  body: { ok: true },
  sessionId: 's',
  receipt: null,
  answering: {
    fragment: (first: number) => ({ ctes: `ev_ins AS (SELECT $${first}::bigint AS seq)`, select: 'SELECT seq, NULL AS type, NULL AS payload, NULL AS fan_out FROM ev_ins', values: [7], rows: 1 }),
    take: (rows: OutboxRow[]) => taken.push(rows),
  },
});

describe('idempotent write', () => {
  it('inserts the outbox rows and the receipt in one statement of its transaction, and hands the rows over', async () => {
    const taken: OutboxRow[][] = [];
    answers = [[{ seq: '7', type: 't', payload: '{}', fan_out: null }]];
    const result = await write.execute(scope, work(taken));
    assert.deepEqual([result.replayed, result.body, transactions], [false, '{"ok":true}', 1]);
    // The key read, then one statement in the transaction.
    assert.equal(statements.length, 2);
    assert.match(statements[1]!, /WITH ev_ins AS .*acc_receipt AS \(INSERT INTO idempotency_receipts/s);
    assert.deepEqual(taken, [[{ seq: '7', type: 't', payload: '{}', fan_out: null }]]);
  });

  it('skips the key read when the caller already read it (looked)', async () => {
    answers = [[{ seq: null, type: null, payload: null, fan_out: null }]];
    const taken: OutboxRow[][] = [];
    await write.execute(scope, work(taken), undefined, true);
    assert.equal(statements.length, 1);
    assert.deepEqual(taken, [[]], 'a row of nulls: the receipt inserted, no outbox row');
  });

  it('replays the first response when the receipt insert found a live receipt (the transaction rolls back)', async () => {
    answers = [[]];
    const taken: OutboxRow[][] = [];
    const pending = write.execute(scope, work(taken));
    receipt = live();
    const result = await pending;
    assert.deepEqual([result.replayed, result.body, taken.length], [true, '{"first":true}', 0]);
  });

  it('answers a live receipt from the read without a transaction, and 409s another intent', async () => {
    receipt = live();
    assert.equal((await write.execute(scope, work([]))).replayed, true);
    receipt = live('other');
    await assert.rejects(write.execute(scope, work([])), (error: unknown) => error instanceof DomainError && error.code === 'idempotency_conflict');
    assert.equal(transactions, 0);
  });
});
