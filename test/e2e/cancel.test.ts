import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API, createSession, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { busySession } from '../support/scenarios.js';
import { SseStream } from '../support/sse.js';
import { withWorkerStopped } from '../support/worker-process.js';

const SLOW = 'one two three four five six seven eight nine ten [[delay:80]]';

const control = postEvent;

async function turnsInOrder(sessionId: string): Promise<any[]> {
  return (await http(`${API}/sessions/${sessionId}/turns?order=asc&limit=100`)).body.data;
}

describe('cancel, pause and continue', () => {
  it('cancels mid-model: the shown text is kept as an incomplete item and the turn ends cancelled', async () => {
    const { session, stream, turn: created } = await busySession(SLOW);
    try {
      const turnId = created.data.turn_id;
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' two');

      const cancel = await control(session.id, { type: 'agent.session.input.cancel' });
      assert.equal(cancel.status, 202);
      assert.equal(cancel.body.turn_id, turnId, 'the receipt points at the cancelled turn');
      assert.equal(cancel.body.run_id, created.data.turn.yuxi.current_run_id);

      const state = await stream.waitForType('yuxi.session.turn.state', turnId);
      assert.equal(state.data.turn.yuxi.cancellation_pending, true);
      assert.equal(state.data.turn.status, 'in_progress', 'the turn stays in progress while it stops');
      const cancelled = await stream.waitForType('agent.session.turn.cancelled', turnId);
      assert.equal(cancelled.data.turn.status, 'cancelled');
      assert.ok(stream.events.some((e) => e.type === 'yuxi.session.run.cancelled'));
      const done = stream.events.find((e) => e.type === 'agent.session.turn.item.done' && e.data.item.role === 'assistant');
      assert.equal(done?.data.item.status, 'incomplete');

      const turn = await http(`${API}/sessions/${session.id}/turns/${turnId}`);
      assert.equal(turn.body.status, 'cancelled');
      assert.equal(turn.body.yuxi.cancellation_pending, false);
      assert.equal(turn.body.yuxi.result_run_id, null);
      assert.equal(turn.body.yuxi.runs[0].status, 'cancelled');
      assert.equal(turn.body.yuxi.usage.model_calls, 1, 'the stopped model call is still a call (in the ledger with the settle)');
      const items = await http(`${API}/sessions/${session.id}/turns/${turnId}/items?order=asc`);
      const partial = items.body.data.find((i: any) => i.role === 'assistant');
      assert.equal(partial.status, 'incomplete');
      const full = 'Echo: one two three four five six seven eight nine ten';
      assert.ok(full.startsWith(partial.content[0].text), 'the kept text is what was streamed');
      assert.ok(partial.content[0].text.length < full.length, 'the model call stopped before it finished');
      const streamed = stream.events.filter((e) => e.type === 'agent.session.turn.output_text.delta').map((e) => e.data.delta).join('');
      assert.equal(partial.content[0].text, streamed);

      const read = await http(`${API}/sessions/${session.id}`);
      assert.equal(read.body.status, 'cancelled');
      assert.equal(read.body.yuxi.queue_paused, false, 'an empty queue is not paused');
    } finally {
      stream.close();
    }
  });

  it('replaying a cancel answers the first receipt and never touches the next turn', async () => {
    const { session, stream, turn: first } = await busySession(SLOW);
    try {
      const key = newKey('cancel');
      const cancel = await control(session.id, { type: 'agent.session.input.cancel' }, key);
      await stream.waitForType('agent.session.turn.cancelled', first.data.turn_id);

      await sendMessage(session.id, 'next a b c [[delay:40]]');
      const next = await stream.waitFor((e) => e.type === 'agent.session.turn.created' && e.data.turn_id !== first.data.turn_id);
      const replay = await control(session.id, { type: 'agent.session.input.cancel' }, key);
      assert.equal(replay.status, 202);
      assert.equal(replay.text, cancel.text);
      const completed = await stream.waitForType('agent.session.turn.completed', next.data.turn_id);
      assert.equal(completed.data.turn.status, 'completed');
    } finally {
      stream.close();
    }
  });

  it('rejects a stale expected_run_id, an ended turn and a cancel with nothing running', async () => {
    const session = await createSession();
    const idle = await control(session.id, { type: 'agent.session.input.cancel' });
    assert.equal(idle.status, 409);
    assert.equal(idle.body.error.code, 'state_conflict');
    const stream = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, SLOW);
      const created = await stream.waitForType('agent.session.turn.created');
      const stale = await control(session.id, { type: 'agent.session.input.cancel', yuxi: { expected_run_id: '00000000-0000-7000-8000-000000000000' } });
      assert.equal(stale.status, 409);
      assert.equal(stale.body.error.details.current_run_id, created.data.turn.yuxi.current_run_id);
      const unknown = await control(session.id, { type: 'agent.session.input.cancel', yuxi: { turn_id: '00000000-0000-7000-8000-000000000000' } });
      assert.equal(unknown.status, 404);
      const malformed = await control(session.id, { type: 'agent.session.input.cancel', yuxi: { turn_id: 'not-a-turn' } });
      assert.equal(malformed.status, 404);
      const exact = await control(session.id, {
        type: 'agent.session.input.cancel',
        yuxi: { turn_id: created.data.turn_id, expected_run_id: created.data.turn.yuxi.current_run_id },
      });
      assert.equal(exact.status, 202);
      await stream.waitForType('agent.session.turn.cancelled', created.data.turn_id);
      const ended = await control(session.id, { type: 'agent.session.input.cancel', yuxi: { turn_id: created.data.turn_id } });
      assert.equal(ended.status, 409);
    } finally {
      stream.close();
    }
  });

  it('pauses the queue when inputs are pending and resumes it in order with continue', async () => {
    const { session, stream, turn: running } = await busySession(SLOW);
    try {
      const x = (await sendMessage(session.id, 'x')).body;
      const y = (await sendMessage(session.id, 'y')).body;
      const notPaused = await control(session.id, { type: 'yuxi.session.input.continue' });
      assert.equal(notPaused.status, 409);

      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === running.data.turn_id);
      // The cancel is accepted while the worker running the turn is stopped: the turn is still
      // being cancelled when the continue arrives, so there is nothing to continue yet.
      await withWorkerStopped(async () => {
        const cancel = await control(session.id, { type: 'agent.session.input.cancel' });
        assert.equal(cancel.status, 202, cancel.text);
        const early = await control(session.id, { type: 'yuxi.session.input.continue' });
        assert.equal(early.status, 409, early.text);
        assert.equal(early.body.error.code, 'state_conflict');
      });
      await stream.waitForType('agent.session.turn.cancelled', running.data.turn_id);

      // Settled: the queue waits behind a pause until the client continues it.
      const queue = await http(`${API}/sessions/${session.id}/queue`);
      assert.equal(queue.body.paused, true);
      assert.deepEqual(queue.body.data.map((i: any) => i.id), [x.input_id, y.input_id]);
      const read = await http(`${API}/sessions/${session.id}`);
      assert.equal(read.body.yuxi.queue_paused, true);
      assert.equal(read.body.status, 'cancelled');
      const resumed = await control(session.id, { type: 'yuxi.session.input.continue' });
      assert.equal(resumed.status, 202);
      let completed = 0;
      await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ++completed === 2);
      const turns = await turnsInOrder(session.id);
      assert.deepEqual(turns.map((t) => t.status), ['cancelled', 'completed', 'completed']);
      const inputs = await Promise.all([x, y].map((r) => http(`${API}/sessions/${session.id}/inputs/${r.input_id}`)));
      assert.deepEqual(inputs.map((i) => i.body.turn_id), [turns[1].id, turns[2].id], 'the old queue resumes in its order');
    } finally {
      stream.close();
    }
  });

  it('keeps an old input promoted to steer out of the turn of the message that resumed the queue', async () => {
    const { session, stream, turn: running } = await busySession(SLOW);
    try {
      const old = (await sendMessage(session.id, 'old')).body;
      await control(session.id, { type: 'agent.session.input.cancel' });
      await stream.waitForType('agent.session.turn.cancelled', running.data.turn_id);

      const fresh = (await sendMessage(session.id, 'fresh message a b c d e f [[delay:60]]')).body;
      const freshTurn = await stream.waitFor((e) => e.type === 'agent.session.turn.created' && e.data.turn_id !== running.data.turn_id);
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === freshTurn.data.turn_id);
      // Promoted while the resuming message runs: a steer, but an old one, so it waits its turn.
      const promoted = await control(session.id, { type: 'yuxi.session.input.promote', input_id: old.input_id });
      assert.equal(promoted.status, 202);

      let completed = 0;
      await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ++completed === 2);
      const detail = await http(`${API}/sessions/${session.id}/turns/${freshTurn.data.turn_id}`);
      assert.deepEqual(detail.body.yuxi.runs.map((r: any) => r.input_ids), [[fresh.input_id]], 'the resuming message ran alone');
      const oldInput = await http(`${API}/sessions/${session.id}/inputs/${old.input_id}`);
      assert.equal(oldInput.body.mode, 'steer');
      assert.notEqual(oldInput.body.turn_id, freshTurn.data.turn_id, 'the old steer ran in a turn of its own afterwards');
      assert.equal(oldInput.body.status, 'consumed');
    } finally {
      stream.close();
    }
  });

  it('runs a new message to a paused queue alone first, then resumes the old queue', async () => {
    const { session, stream, turn: running } = await busySession(SLOW);
    try {
      const old = (await sendMessage(session.id, 'old')).body;
      await control(session.id, { type: 'agent.session.input.cancel' });
      await stream.waitForType('agent.session.turn.cancelled', running.data.turn_id);
      assert.equal((await http(`${API}/sessions/${session.id}/queue`)).body.paused, true);

      const fresh = (await sendMessage(session.id, 'fresh')).body;
      let completed = 0;
      await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ++completed === 2);
      const turns = await turnsInOrder(session.id);
      const freshInput = await http(`${API}/sessions/${session.id}/inputs/${fresh.input_id}`);
      const oldInput = await http(`${API}/sessions/${session.id}/inputs/${old.input_id}`);
      assert.equal(freshInput.body.turn_id, turns[1].id, 'the new message runs first');
      assert.equal(oldInput.body.turn_id, turns[2].id, 'then the old queue');
      assert.equal((await http(`${API}/sessions/${session.id}/queue`)).body.paused, false);
    } finally {
      stream.close();
    }
  });
});
