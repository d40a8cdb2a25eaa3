import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { composeFragments, shiftParams } from '#libs/database';
import { EventOutbox, type OutboxBatch, OutboxSubscribers, type OutboxWrite } from '#libs/events';
import { claimBatch, type Committed, type InputEntity, SessionTransactions } from '#libs/engine';

// The one transaction helper and the claim's pure choices: no database (a recording manager stands in).

describe('one statement of buffered writes', () => {
  it('renumbers each fragment\'s parameters after the ones before it', () => {
    assert.equal(shiftParams('UPDATE t SET a = $1, b = $2 WHERE id = $10', 3), 'UPDATE t SET a = $4, b = $5 WHERE id = $13');
    const { sql, params, names } = composeFragments(
      [{ sql: 'UPDATE a SET x = $1 WHERE id = $2', params: [1, 'a'] }, { name: 'run', sql: 'INSERT INTO b (y) VALUES ($1) RETURNING y', params: [2] }],
      { ctes: ['ins AS (INSERT INTO c (z) VALUES ($1))'], params: [3], select: (n) => `SELECT (SELECT json_agg(${n[1]}) FROM ${n[1]}) AS r` },
    );
    assert.deepEqual(names, ['f0', 'run']);
    assert.deepEqual(params, [1, 'a', 2, 3]);
    assert.match(sql, /^WITH f0 AS \(UPDATE a SET x = \$1 WHERE id = \$2\),\nrun AS \(INSERT INTO b \(y\) VALUES \(\$3\) RETURNING y\),\nins AS \(INSERT INTO c \(z\) VALUES \(\$4\)\)\nSELECT/);
  });
});

describe('SessionTransactions', () => {
  function harness() {
    const queries: { sql: string; params: unknown[] }[] = [];
    const sent: Committed[] = [];
    const log: string[] = [];
    const manager = {
      query: async (sql: string | { text: string }, params: unknown[]) => {
        const text = typeof sql === 'string' ? sql : sql.text;
        queries.push({ sql: text, params });
        log.push('query');
        return [{ events: [[7, 'a', '{"seq":7}']], fan_out: null, run: [{ epoch: 4 }] }];
      },
    };
    const dataSource = { manager, transaction: async <T>(fn: (m: unknown) => Promise<T>) => { log.push('begin'); const v = await fn(manager); log.push('commit'); return v; } };
    const outbox = {
      appendWrite: (sessionId: string, events: unknown[]): OutboxWrite | null =>
        events.length === 0 ? null : { ctes: ['base AS (SELECT 1 AS n)', 'ins AS (INSERT INTO e (s) VALUES ($1) RETURNING seq, type, payload)'], params: [sessionId], rowsCte: 'ins', fanOut: 'NULL::json', size: events.length, batch: (rows): OutboxBatch => ({ sessionId, rows: rows.map((r) => ({ seq: Number(r.seq), epoch: null, type: r.type, payload: r.payload })) }) },
    };
    const afterCommit = { send: async (committed: Committed) => { log.push('send'); sent.push(committed); return { complete: true }; } };
    const transactions = new SessionTransactions(dataSource as never, outbox as never, afterCommit as never);
    return { transactions, queries, sent, log };
  }

  it('writes the buffered fragments and the events as one statement, commits, then publishes and nudges', async () => {
    const { transactions, queries, sent, log } = harness();
    let epoch = 0;
    const value = await transactions.transaction('s1', async (tx) => {
      tx.write({ sql: 'UPDATE sessions SET n = $1', params: [1] });
      tx.write({ name: 'run', sql: 'INSERT INTO runs (x) VALUES ($1) RETURNING epoch', params: [2] }, ([row]) => {
        epoch = Number(row?.epoch);
        tx.nudge({ kind: 'account', accountId: 'acc' });
      });
      tx.emit([{ type: 'a' } as never]);
      tx.nudge({ kind: 'queue' });
      return 'done';
    });
    assert.equal(value, 'done');
    assert.equal(queries.length, 1);
    assert.match(queries[0]!.sql, /f0 AS \(UPDATE sessions SET n = \$1\),\nrun AS \(INSERT INTO runs \(x\) VALUES \(\$2\) RETURNING epoch\),\nbase AS/);
    assert.deepEqual(queries[0]!.params, [1, 2, 's1']);
    assert.equal(epoch, 4);
    assert.deepEqual(log, ['begin', 'query', 'commit', 'send']);
    assert.deepEqual(sent[0]!.batch.rows.map((r) => r.seq), [7]);
    assert.deepEqual(sent[0]!.nudges, [{ kind: 'queue' }, { kind: 'account', accountId: 'acc' }]);
  });

  it('runs without START and COMMIT when asked, and writes nothing when nothing was buffered', async () => {
    const { transactions, queries, log } = harness();
    await transactions.transaction('s1', async (tx) => tx.write({ sql: 'UPDATE x SET y = $1', params: [1] }), { transaction: false });
    assert.deepEqual(log, ['query', 'send']);
    await transactions.transaction('s1', async () => null);
    assert.equal(queries.length, 1);
  });

  it('rolls back what a handler of the write refuses, and sends nothing', async () => {
    const { transactions, log } = harness();
    await assert.rejects(
      transactions.transaction('s1', async (tx) => tx.write({ name: 'run', sql: 'UPDATE x SET y = $1 RETURNING y', params: [1] }, () => { throw new Error('refused'); })),
      /refused/,
    );
    assert.deepEqual(log, ['begin', 'query']);
  });
});

describe('the batch of a composed append', () => {
  it('carries the epoch each row was written with, computed by the statement (a claim\'s new run), so publishing it raises the fence', () => {
    const publisher = { stamp: (_id: string, events: object[]) => events } as never;
    const outbox = new EventOutbox({} as never, publisher, new OutboxSubscribers());
    const write = outbox.appendWrite('s1', [{ type: 'agent.session.turn.created' } as never], { epochSql: '(SELECT epoch FROM run)' });
    assert.ok(write);
    assert.match(write.ctes.join('\n'), /coalesce\(\(SELECT epoch FROM run\), \$2\)/);
    assert.match(write.ctes.join('\n'), /RETURNING seq, type, payload, event_id, epoch\)/);
    assert.deepEqual(write.batch([{ seq: 12, type: 'agent.session.turn.created', payload: '{}', epoch: 7 }], null).rows.map((r) => [r.seq, r.epoch]), [[12, 7]]);
    // A row read back without one keeps the append's own (an acceptance announces no run).
    assert.deepEqual(outbox.batchOf('s1', [{ seq: '3', type: 't', payload: '{}' }], { epoch: 2 }).rows.map((r) => r.epoch), [2]);
  });
});

describe('what a claim takes from the queue', () => {
  const input = (id: string, mode: 'steer' | 'follow_up', priority = 0) => ({ id, mode, priority }) as unknown as InputEntity;
  it('a follow-up head runs alone; a steer head takes the contiguous steers of its priority', () => {
    assert.deepEqual(claimBatch([input('a', 'follow_up'), input('b', 'steer')]).map((i) => i.id), ['a']);
    assert.deepEqual(claimBatch([input('a', 'steer'), input('b', 'steer'), input('c', 'follow_up'), input('d', 'steer')]).map((i) => i.id), ['a', 'b']);
    assert.deepEqual(claimBatch([input('a', 'steer', 1), input('b', 'steer', 0)]).map((i) => i.id), ['a']);
    assert.deepEqual(claimBatch([]), []);
  });
});
