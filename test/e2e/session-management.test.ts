import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { query } from '../support/db.js';
import { API, createSession, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { withWorkerStopped } from '../support/worker-process.js';

function cancelInput(sessionId: string, inputId: string, key = newKey('cancel')) {
  return postEvent(sessionId, { type: 'yuxi.session.input.cancel_input', input_id: inputId }, key);
}

describe('session management', () => {
  it('updates title, pin, read state and later-input defaults without moving last_active_at', async () => {
    const session = await createSession();
    const before = (await http(`${API}/sessions/${session.id}`)).body;
    // Resource times are Unix seconds: the update comes in a later second, so a moved
    // last_active_at would show (bounded: the clock moves within a second).
    const createdSecond = Math.floor(Date.now() / 1000);
    for (let i = 0; i < 60 && Math.floor(Date.now() / 1000) <= createdSecond; i++) await sleep(25);

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
    /** The one consistent ending of either winner: a cancelled input never runs, a consumed one runs once. */
    async function assertOneWinner(sessionId: string, inputId: string, cancel: { status: number; text: string }): Promise<void> {
      const input = await http(`${API}/sessions/${sessionId}/inputs/${inputId}`);
      if (cancel.status === 202) {
        assert.equal(input.body.status, 'cancelled');
      } else {
        assert.equal(cancel.status, 409, cancel.text);
        assert.equal(input.body.status, 'consumed');
      }
      const runs = await query(`SELECT count(*)::int AS n FROM runs WHERE $1 = ANY(input_ids)`, [inputId]);
      assert.equal(runs[0].n, cancel.status === 202 ? 0 : 1, 'never a double run, never a run of a cancelled input');
    }

    // Each winner forced once. The cancel first: it arrives while no worker can claim (the
    // worker is stopped), so it wins and the input never runs, before or after the worker resumes.
    const early = await createSession();
    const earlyStream = await SseStream.open(early.id);
    try {
      const earlyCancel = await withWorkerStopped(async () => {
        const receipt = (await sendMessage(early.id, 'cancelled before any claim')).body;
        return { inputId: receipt.input_id as string, res: await cancelInput(early.id, receipt.input_id) };
      });
      assert.equal(earlyCancel.res.status, 202, earlyCancel.res.text);
      // A later message runs, so the worker has had its chance at the queue.
      await sendMessage(early.id, 'after the cancelled one');
      await earlyStream.waitForType('agent.session.turn.completed');
      await assertOneWinner(early.id, earlyCancel.inputId, earlyCancel.res);
    } finally {
      earlyStream.close();
    }
    // The claim first: the cancel arrives once the input's turn exists.
    const late = await createSession();
    const lateStream = await SseStream.open(late.id);
    try {
      const receipt = (await sendMessage(late.id, 'claimed before the cancel')).body;
      await lateStream.waitForType('agent.session.turn.created');
      const lateCancel = await cancelInput(late.id, receipt.input_id);
      assert.equal(lateCancel.status, 409, lateCancel.text);
      await assertOneWinner(late.id, receipt.input_id, lateCancel);
    } finally {
      lateStream.close();
    }

    // And raced: whichever wins, the ending is one of the two above.
    for (let round = 0; round < 8; round += 1) {
      const session = await createSession();
      const receipt = (await sendMessage(session.id, `race ${round}`)).body;
      const cancel = await cancelInput(session.id, receipt.input_id);
      await assertOneWinner(session.id, receipt.input_id, cancel);
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
      // The list shows active sessions: without a filter, the archive stays out of the list.
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
  it('keeps metadata: set at create, replaced by an update, filtered in lists with metadata[key]=value', async () => {
    const label = newKey('label');
    const created = await http(`${API}/sessions`, {
      idempotencyKey: newKey('create'),
      body: { agent_id: 'default-chatbot', yuxi: { metadata: { channel: 'web', run: label } } },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.yuxi.metadata, { channel: 'web', run: label });
    const other = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', yuxi: { metadata: { channel: 'api', run: label } } } });
    assert.equal(other.status, 201, other.text);
    assert.deepEqual((await createSession()).yuxi.metadata, {}, 'no metadata: an empty map');

    const both = await http(`${API}/sessions?limit=100&metadata[run]=${encodeURIComponent(label)}`);
    assert.equal(both.status, 200, both.text);
    assert.deepEqual(both.body.data.map((s: any) => s.id).sort(), [created.body.id, other.body.id].sort());
    const web = await http(`${API}/sessions?limit=100&metadata[run]=${encodeURIComponent(label)}&metadata[channel]=web`);
    assert.deepEqual(web.body.data.map((s: any) => s.id), [created.body.id], 'every pair must match');

    const replaced = await http(`${API}/sessions/${created.body.id}`, { body: { yuxi: { metadata: { channel: 'mobile' } } } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body.yuxi.metadata, { channel: 'mobile' }, 'an update replaces the whole map');
    const after = await http(`${API}/sessions?limit=100&metadata[run]=${encodeURIComponent(label)}`);
    assert.deepEqual(after.body.data.map((s: any) => s.id), [other.body.id]);
    assert.deepEqual((await http(`${API}/sessions/${created.body.id}`, { body: { yuxi: { metadata: {} } } })).body.yuxi.metadata, {}, '{} clears it');
  });

  it('bounds metadata (16 keys, 64-character keys, 512-character string values): 422 naming the field, nothing stored', async () => {
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const session = await createSession();
    const bad: [unknown, string][] = [
      [tooMany, 'at most 16 keys'],
      [{ ['k'.repeat(65)]: 'v' }, '1–64 characters'],
      [{ note: 'v'.repeat(513) }, 'at most 512 characters'],
      [{ count: 3 }, 'must be a string'],
      [['a'], 'must be an object'],
    ];
    for (const [metadata, problem] of bad) {
      const update = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { metadata } } });
      assert.equal(update.status, 422, JSON.stringify(metadata).slice(0, 80));
      assert.equal(update.body.error.code, 'validation_failed');
      const field = update.body.error.details.fields.find((f: any) => f.field === 'yuxi.metadata');
      assert.ok(field, `the field path is named: ${update.text}`);
      assert.ok(field.errors.join(' ').includes(problem), `${problem}: ${update.text}`);
      const create = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', yuxi: { metadata } } });
      assert.equal(create.status, 422);
    }
    const exactly = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`${i}`.padEnd(64, 'k'), 'v'.repeat(512)]));
    const atTheBounds = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { metadata: exactly } } });
    assert.equal(atTheBounds.status, 200, 'the bounds themselves are accepted');
    assert.equal((await http(`${API}/sessions/${session.id}`)).body.yuxi.revision, 2, 'the refused updates changed nothing');
    const repeated = await http(`${API}/sessions?metadata[a]=1&metadata[a]=2`);
    assert.equal(repeated.status, 422, 'a repeated filter key is refused, not read as one of its values');
    const unknown = await http(`${API}/sessions/${session.id}/turns?metadata[a]=1`);
    assert.equal(unknown.status, 422, 'other lists take no metadata filter');
  });

  it('counts revisions: every update adds one, a stale If-Match is 412 and changes nothing', async () => {
    const session = await createSession();
    assert.equal(session.yuxi.revision, 1);
    // No ETag: the revision counts updates, while the status changes with every turn. A cache that
    // revalidates with If-None-Match gets the session as it is now, never a 304 of a stale status.
    const read = await http(`${API}/sessions/${session.id}`, { headers: { 'if-none-match': '"1"' } });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get('etag'), null);

    const renamed = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { title: 'First' } }, headers: { 'if-match': '"1"' } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.yuxi.revision, 2);

    const stale = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { title: 'Stale' } }, headers: { 'if-match': '"1"' } });
    assert.equal(stale.status, 412, stale.text);
    assert.equal(stale.body.error.code, 'revision_mismatch');
    assert.equal(stale.body.error.details.revision, 2);
    assert.equal(stale.body.error.details.expected_revision, 1);
    const unchanged = (await http(`${API}/sessions/${session.id}`)).body;
    assert.equal(unchanged.yuxi.title, 'First');
    assert.equal(unchanged.yuxi.revision, 2);
    assert.equal((await http(`${API}/sessions/${session.id}`, { body: {}, headers: { 'if-match': '1' } })).status, 412, 'an empty update checks the revision too');

    const bare = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { is_pinned: true } }, headers: { 'if-match': '2' } });
    assert.equal(bare.status, 200, 'the bare number works as well');
    assert.equal(bare.body.yuxi.revision, 3);
    const unconditional = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { unread: false } } });
    assert.equal(unconditional.body.yuxi.revision, 4, 'without If-Match the update applies and still counts');
    const malformed = await http(`${API}/sessions/${session.id}`, { body: { yuxi: { title: 'x' } }, headers: { 'if-match': 'yesterday' } });
    assert.equal(malformed.status, 422, 'an unreadable condition is refused, not ignored');
    assert.equal(malformed.body.error.details.fields[0].field, 'If-Match');

    // Two writers holding the same revision: the compare is part of the UPDATE, so exactly one wins.
    const racing = await Promise.all(
      ['A', 'B'].map((title) => http(`${API}/sessions/${session.id}`, { body: { yuxi: { title } }, headers: { 'if-match': '"4"' } })),
    );
    assert.deepEqual(racing.map((r) => r.status).sort(), [200, 412]);

    // A turn is not an update of the session: its revision stays.
    const stream = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, 'a turn');
      await stream.waitForType('agent.session.turn.completed');
    } finally {
      stream.close();
    }
    assert.equal((await http(`${API}/sessions/${session.id}`)).body.yuxi.revision, 5);
    const archived = await http(`${API}/sessions/${session.id}/archive`, { method: 'POST' });
    assert.equal(archived.body.yuxi.revision, 6, 'archiving is an update');
  });
});
