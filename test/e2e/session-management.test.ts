import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { query } from '../support/db.js';
import { API, createSession, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';

function cancelInput(sessionId: string, inputId: string, key = newKey('cancel')) {
  return postEvent(sessionId, { type: 'yuxi.session.input.cancel_input', input_id: inputId }, key);
}

describe('session management', () => {
  it('updates title, pin, read state and later-input defaults without moving last_active_at', async () => {
    const session = await createSession();
    await query(`UPDATE sessions SET last_active_at = last_active_at - interval '1 hour' WHERE id = $1`, [session.id]);
    const before = (await http(`${API}/sessions/${session.id}`)).body;

    const res = await http(`${API}/sessions/${session.id}`, {
      body: { agent: { model: 'scripted:other' }, yuxi: { title: 'Renamed', is_pinned: true, unread: true, tool_approval_mode: 'always_trust' } },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.object, 'agent.session');
    assert.equal(res.body.yuxi.title, 'Renamed');
    assert.equal(res.body.yuxi.is_pinned, true);
    assert.equal(res.body.yuxi.unread, true);
    assert.equal(res.body.yuxi.tool_approval_mode, 'always_trust');
    assert.equal(res.body.agent.model, 'scripted:other');
    assert.equal(res.body.last_active_at, before.last_active_at, 'presentation updates do not move last_active_at');
    assert.equal(res.body.status, 'idle');

    const read = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { unread: false } } });
    assert.equal(read.body.yuxi.unread, false);
    assert.equal(read.body.yuxi.title, 'Renamed', 'omitted fields keep their value');

    const receipt = (await sendMessage(session.id, 'after the update')).body;
    const input = await http(`${API}/sessions/${session.id}/inputs/${receipt.input_id}`);
    assert.equal(input.body.model, 'scripted:other', 'the new default is frozen into later inputs');

    const pinned = await http(`${API}/sessions?is_pinned=true&limit=100`);
    assert.ok(pinned.body.data.some((s: any) => s.id === session.id));
    assert.ok(pinned.body.data.every((s: any) => s.yuxi.is_pinned));
  });

  it('rejects explicit nulls, unknown fields and unknown models in updates', async () => {
    const session = await createSession();
    for (const body of [{ yuxi: { title: null } }, { agent: { model: null } }, { yuxi: { color: 'red' } }]) {
      const res = await http(`${API}/sessions/${session.id}`, { body });
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.equal(res.body.error.code, 'validation_failed');
    }
    const model = await http(`${API}/sessions/${session.id}`, { body: { agent: { model: 'nowhere:x' } } });
    assert.equal(model.status, 422);
    assert.equal(model.body.error.code, 'invalid_model');
  });

  it('shows the queue and each input from received to consumed', async () => {
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      const slow = (await sendMessage(session.id, 'a b c d e [[delay:60]]')).body;
      await stream.waitForType('agent.session.turn.created');
      const second = (await sendMessage(session.id, 'second')).body;
      const third = (await sendMessage(session.id, 'third')).body;

      const queue = await http(`${API}/sessions/${session.id}/queue`);
      assert.equal(queue.status, 200);
      assert.equal(queue.body.paused, false);
      assert.deepEqual(queue.body.data.map((i: any) => i.id), [second.input_id, third.input_id]);
      const pending = await http(`${API}/sessions/${session.id}/inputs/${second.input_id}`);
      assert.equal(pending.body.status, 'pending');
      assert.equal(pending.body.turn_id, null);
      assert.equal(pending.body.created_at, null);
      assert.deepEqual(pending.body.items, []);
      assert.deepEqual(pending.body.messages, [{ role: 'user', content: [{ type: 'input_text', text: 'second' }] }]);
      const state = await http(`${API}/sessions/${session.id}/state`);
      assert.equal(state.body.status, 'in_progress');
      assert.equal(state.body.queued_input_count, 2);

      let completed = 0;
      await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ++completed === 3);
      const consumed = await http(`${API}/sessions/${session.id}/inputs/${slow.input_id}`);
      assert.equal(consumed.body.status, 'consumed');
      assert.ok(consumed.body.turn_id);
      assert.ok(consumed.body.run_id);
      assert.equal(typeof consumed.body.created_at, 'number');
      assert.equal(consumed.body.items[0].content[0].text, 'a b c d e [[delay:60]]');
      const empty = await http(`${API}/sessions/${session.id}/queue`);
      assert.deepEqual(empty.body.data, []);
    } finally {
      stream.close();
    }
  });

  it('cancels a pending input so it never runs; a consumed or cancelled one is 409, an unknown one 404', async () => {
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, 'hold the turn a b c d [[delay:60]]');
      await stream.waitForType('agent.session.turn.created');
      const doomed = (await sendMessage(session.id, 'never runs')).body;
      const kept = (await sendMessage(session.id, 'runs')).body;

      const key = newKey('cancel');
      const cancelled = await cancelInput(session.id, doomed.input_id, key);
      assert.equal(cancelled.status, 202);
      assert.equal(cancelled.body.input_id, doomed.input_id);
      assert.equal(cancelled.body.turn_id, null);
      const replay = await cancelInput(session.id, doomed.input_id, key);
      assert.equal(replay.text, cancelled.text, 'a replay returns the first receipt');
      const again = await cancelInput(session.id, doomed.input_id);
      assert.equal(again.status, 409);
      assert.equal(again.body.error.code, 'state_conflict');
      const unknown = await cancelInput(session.id, '00000000-0000-7000-8000-000000000000');
      assert.equal(unknown.status, 404);

      let completed = 0;
      await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ++completed === 2);
      const input = await http(`${API}/sessions/${session.id}/inputs/${doomed.input_id}`);
      assert.equal(input.body.status, 'cancelled');
      assert.equal(input.body.turn_id, null);
      assert.deepEqual(input.body.items, []);
      const ran = await http(`${API}/sessions/${session.id}/inputs/${kept.input_id}`);
      assert.equal(ran.body.status, 'consumed');
      const turns = await http(`${API}/sessions/${session.id}/turns`);
      assert.equal(turns.body.data.length, 2, 'the cancelled input never became a turn');
      const consumedAgain = await cancelInput(session.id, kept.input_id);
      assert.equal(consumedAgain.status, 409);
    } finally {
      stream.close();
    }
  });

  it('lets exactly one of cancel_input and the worker claim win a race for the same input', async () => {
    for (let round = 0; round < 8; round += 1) {
      const session = await createSession();
      const receipt = (await sendMessage(session.id, `race ${round}`)).body;
      const cancel = await cancelInput(session.id, receipt.input_id);
      const input = await http(`${API}/sessions/${session.id}/inputs/${receipt.input_id}`);
      if (cancel.status === 202) {
        assert.equal(input.body.status, 'cancelled');
      } else {
        assert.equal(cancel.status, 409, cancel.text);
        assert.equal(input.body.status, 'consumed');
      }
      const turns = await query(`SELECT count(*)::int AS n FROM runs WHERE $1 = ANY(input_ids)`, [receipt.input_id]);
      assert.equal(turns[0].n, cancel.status === 202 ? 0 : 1, 'never a double run, never a run of a cancelled input');
    }
  });

  it('archives only without an active turn or pending input, and keeps history readable', async () => {
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, 'busy a b c [[delay:60]]');
      await stream.waitForType('agent.session.turn.created');
      const busy = await http(`${API}/sessions/${session.id}/archive`, { method: 'POST' });
      assert.equal(busy.status, 409);
      assert.equal(busy.body.error.code, 'state_conflict');
      await stream.waitForType('agent.session.turn.completed');

      const archived = await http(`${API}/sessions/${session.id}/archive`, { method: 'POST' });
      assert.equal(archived.status, 200);
      assert.equal(archived.body.yuxi.archived, true);
      const items = await http(`${API}/sessions/${session.id}/items`);
      assert.equal(items.body.data.length, 2);
      const listed = await http(`${API}/sessions?archived=true&limit=100`);
      assert.ok(listed.body.data.some((s: any) => s.id === session.id));
      const notListed = await http(`${API}/sessions?archived=false&limit=100`);
      assert.ok(!notListed.body.data.some((s: any) => s.id === session.id));
      // 001 lists active threads: without a filter, the archive stays out of the list.
      const active = await createSession();
      const byDefault = await http(`${API}/sessions?limit=100`);
      assert.ok(byDefault.body.data.some((s: any) => s.id === active.id), 'an active session is listed by default');
      assert.ok(!byDefault.body.data.some((s: any) => s.id === session.id), 'an archived one is not');
      const late = await sendMessage(session.id, 'too late');
      assert.equal(late.status, 409);
      assert.equal(late.body.error.code, 'state_conflict');
    } finally {
      stream.close();
    }
  });
});
