import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { dataSourceOptions } from '#libs/database';
import { IdempotencyReceiptEntity, IdempotencyService } from '#libs/engine';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { call, newProductUser } from '../support/identity.js';

// The receipt sweep deletes a receipt when its own `expires_at` has passed (set from the TTL of the
// api replica that wrote it), whatever the TTL of the process that sweeps. The suite's default
// replicas remember keys for 24 h, the file-limits replica for 7.2 s (IDEMPOTENCY_TTL_HOURS=0.002
// in scripts/test.mjs). The sweep runs here through the service on the suite's database, as a
// worker configured with another TTL would run it.

const SHORT = env.apiUrlFileLimits;
const BATCH = 1_000;

let dataSource: DataSource;
/** A sweeper that remembers keys for 1.8 s: shorter than every api of the suite. */
let shortSweeper: IdempotencyService;
/** A sweeper that remembers keys for 24 h: longer than the file-limits api. */
let longSweeper: IdempotencyService;

const sweeper = (ttlHours: string) =>
  new IdempotencyService(dataSource, dataSource.getRepository(IdempotencyReceiptEntity), new AppConfig({ ...process.env, IDEMPOTENCY_TTL_HOURS: ttlHours }));

/** Sweeps in batches until a batch comes back short (bounded: 100 batches). */
async function sweepAll(service: IdempotencyService): Promise<void> {
  for (let i = 0; i < 100; i += 1) if ((await service.deleteExpired(BATCH)) < BATCH) return;
}

/** Rows stored for an idempotency key, read (never written) straight from the database. */
async function storedReceipts(key: string): Promise<number> {
  const client = new pg.Client({ connectionString: env.databaseUrl });
  await client.connect();
  try {
    return Number((await client.query(`SELECT count(*)::int AS n FROM idempotency_receipts WHERE idempotency_key = $1`, [key])).rows[0].n);
  } finally {
    await client.end();
  }
}

before(async () => {
  dataSource = new DataSource({ ...dataSourceOptions(env.databaseUrl, 2), entities: [IdempotencyReceiptEntity] });
  await dataSource.initialize();
  shortSweeper = sweeper('0.0005');
  longSweeper = sweeper('24');
});

after(async () => {
  await dataSource?.destroy();
});

describe('the idempotency receipt sweep', () => {
  it('deletes receipts by their own expiry: a sweeper with a shorter TTL keeps a key the api still remembers, one with a longer TTL deletes a receipt its writer let expire', async () => {
    const { caller } = await newProductUser('receipt sweep');
    const create = (input: string, key: string, baseUrl?: string) => call(caller, `${API}/sessions`, { baseUrl, body: { agent_id: 'default-chatbot', input }, idempotencyKey: key });
    const receipt = (sessionId: string, key: string) => call(caller, `${API}/sessions/${sessionId}/receipt?idempotency_key=${encodeURIComponent(key)}`);

    // Remembered for 24 h (the default replica), then one remembered for 7.2 s (the file-limits replica).
    const longKey = `sweep-long-${Date.now()}`;
    const remembered = await create('remembered', longKey);
    assert.equal(remembered.status, 201, remembered.text);
    const shortKey = `sweep-short-${Date.now()}`;
    const forgettable = await create('forgettable', shortKey, SHORT);
    assert.equal(forgettable.status, 201, forgettable.text);

    // Until the short one is forgotten (bounded: 200 × 100 ms); both are then older than the short sweeper's 1.8 s.
    let forgotten = false;
    for (let i = 0; i < 200 && !forgotten; i += 1) {
      forgotten = (await receipt(forgettable.body.id, shortKey)).status === 404;
      if (!forgotten) await sleep(100);
    }
    assert.ok(forgotten, 'the file-limits replica\'s receipt expired');

    // A sweeper that remembers keys longer than the file-limits replica did deletes its expired receipt.
    await sweepAll(longSweeper);
    assert.equal(await storedReceipts(shortKey), 0, 'the expired receipt is deleted');
    assert.equal(await storedReceipts(longKey), 1);

    // A sweeper that remembers keys shorter than the default replica keeps that replica's receipt.
    await sweepAll(shortSweeper);
    assert.equal(await storedReceipts(longKey), 1, 'the receipt the default replica remembers for 24 h is kept');
    const retried = await create('remembered', longKey);
    assert.equal(retried.status, 201, retried.text);
    assert.equal(retried.body.id, remembered.body.id, 'a retry still replays the first answer: no duplicate session');
    assert.equal((await receipt(remembered.body.id, longKey)).status, 200);
  });
});
