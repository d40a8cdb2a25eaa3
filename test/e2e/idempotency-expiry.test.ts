import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { call, type Caller, newProductUser } from '../support/identity.js';

// The file-limits replica remembers idempotency keys for 7.2 s (IDEMPOTENCY_TTL_HOURS=0.002 in
// scripts/test.mjs); the others for the default 24 h. A receipt keeps the expiry of the replica
// that wrote it, so it can be read back on any replica. That replica also holds tight per-user
// rate limits: a fresh user, and only the submissions go to it.
const SHORT = env.apiUrlFileLimits;

describe('idempotency records expire', () => {
  it('a key replays and conflicts until its receipt expires; afterwards it is free for a new request, remembered again', async () => {
    const { caller } = await newProductUser('idempotency expiry');
    const create = (input: string, key: string) => call(caller, `${API}/sessions`, { baseUrl: SHORT, body: { agent_id: 'default-chatbot', input }, idempotencyKey: key });
    const message = (sessionId: string, input: string, key: string) =>
      call(caller, `${API}/sessions/${sessionId}/events`, { baseUrl: SHORT, body: { events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input }] }, idempotencyKey: key });
    const receipt = (who: Caller, sessionId: string, key: string) => call(who, `${API}/sessions/${sessionId}/receipt?idempotency_key=${encodeURIComponent(key)}`);

    const createKey = `expiring-create-${Date.now()}`;
    const first = await create('first', createKey);
    assert.equal(first.status, 201, first.text);
    const replay = await create('first', createKey);
    assert.equal(replay.status, 201);
    assert.equal(replay.body.id, first.body.id, 'replayed while remembered');
    const conflict = await create('another', createKey);
    assert.equal(conflict.status, 409, conflict.text);
    assert.equal(conflict.body.error.code, 'idempotency_conflict');

    const eventKey = `expiring-event-${Date.now()}`;
    const sent = await message(first.body.id, 'one', eventKey);
    assert.equal(sent.status, 202, sent.text);
    assert.equal((await receipt(caller, first.body.id, eventKey)).body.input_id, sent.body.input_id);

    // Read on the default replica (no tight limits) until the receipt is forgotten: bounded, 200 × 100 ms.
    let forgotten = false;
    for (let i = 0; i < 200 && !forgotten; i += 1) {
      forgotten = (await receipt(caller, first.body.id, eventKey)).status === 404;
      if (!forgotten) await sleep(100);
    }
    assert.ok(forgotten, 'the event receipt expired');
    const createReceipt = await receipt(caller, first.body.id, createKey);
    assert.equal(createReceipt.status, 404, 'the create\'s receipt expired too');

    // The same keys now make new work: another session, another input.
    const again = await create('another', createKey);
    assert.equal(again.status, 201, again.text);
    assert.notEqual(again.body.id, first.body.id);
    const resent = await message(first.body.id, 'two', eventKey);
    assert.equal(resent.status, 202, resent.text);
    assert.notEqual(resent.body.input_id, sent.body.input_id);
    // And are remembered again, for the new request.
    const replayAgain = await create('another', createKey);
    assert.equal(replayAgain.status, 201);
    assert.equal(replayAgain.body.id, again.body.id);
    assert.equal((await message(first.body.id, 'two', eventKey)).body.input_id, resent.body.input_id);
  });
});
