import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { API, createSession, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { busySession } from '../support/scenarios.js';
import { SseStream } from '../support/sse.js';
import { withWorkerStopped } from '../support/worker-process.js';

const SLOW = 'a b c d e f g h i j k l [[delay:80]]';

function message(sessionId: string, input: string, yuxi?: object, key = newKey('msg')) {
  return postEvent(sessionId, { type: 'agent.session.input.message', input, ...(yuxi ? { yuxi } : {}) }, key);
}

function promote(sessionId: string, inputId: string, key = newKey('promote')) {
  return postEvent(sessionId, { type: 'yuxi.session.input.promote', input_id: inputId }, key);
}

async function itemsOf(sessionId: string, turnId: string): Promise<any[]> {
  return (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
}

describe('steer and promote', () => {
  it('steers a running turn: the run yields, the next run of the same turn takes the steer, follow-ups wait', async () => {
    const { session, stream, turn: created } = await busySession(SLOW);
    try {
      const turnId = created.data.turn_id;
      const firstRun = created.data.turn.yuxi.current_run_id;
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' b');
      const follow = (await message(session.id, 'queued follow-up', { mode: 'follow_up' })).body;
      const steer = await message(session.id, 'change of plan', { mode: 'steer' });
      assert.equal(steer.status, 202);
      assert.equal(steer.body.turn_id, null, 'receipts never name the turn');

      const yielded = await stream.waitForType('yuxi.session.run.yielded', turnId);
      assert.equal(yielded.data.run.id, firstRun);
      const completed = await stream.waitForType('agent.session.turn.completed', turnId);
      const turn = await http(`${API}/sessions/${session.id}/turns/${turnId}`);
      assert.equal(turn.body.yuxi.runs.length, 2);
      assert.deepEqual(turn.body.yuxi.runs.map((r: any) => r.status), ['yielded', 'completed']);
      const [first, second] = turn.body.yuxi.runs;
      assert.equal(second.resume_from_run_id, first.id);
      assert.deepEqual(second.input_ids, [steer.body.input_id]);
      assert.equal(turn.body.yuxi.result_run_id, second.id);
      assert.equal(completed.data.turn.yuxi.result_run_id, second.id);
      assert.equal(turn.body.yuxi.output[0].content[0].text, 'Echo: change of plan');
      // The call the steer cut is a model call of the yielded run (its tokens unreported), the answer one of the next.
      assert.deepEqual([first.usage.model_calls, second.usage.model_calls, turn.body.yuxi.usage.model_calls], [1, 1, 2]);

      const items = await itemsOf(session.id, turnId);
      assert.deepEqual(
        items.map((i) => [i.role, i.status, i.phase ?? null]),
        [
          ['user', 'completed', null],
          ['assistant', 'incomplete', 'commentary'],
          ['user', 'completed', null],
          ['assistant', 'completed', 'final_answer'],
        ],
      );
      assert.ok('Echo: a b c d e f g h i j k l'.startsWith(items[1].content[0].text));

      const next = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== turnId);
      const followInput = await http(`${API}/sessions/${session.id}/inputs/${follow.input_id}`);
      assert.equal(followInput.body.turn_id, next.data.turn_id, 'the follow-up was not lost and ran as its own turn');
    } finally {
      stream.close();
    }
  });

  it('batches steers waiting together into one run', async () => {
    const { session, stream, turn: created } = await busySession(SLOW);
    try {
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === created.data.turn_id);
      // Both received while the worker is stopped: both wait when the run reaches its next boundary.
      const [s1, s2] = await withWorkerStopped(() => Promise.all([message(session.id, 'first steer', { mode: 'steer' }), message(session.id, 'second steer', { mode: 'steer' })]));
      assert.deepEqual([s1.status, s2.status], [202, 202]);
      await stream.waitForType('agent.session.turn.completed', created.data.turn_id);
      const turn = await http(`${API}/sessions/${session.id}/turns/${created.data.turn_id}`);
      assert.equal(turn.body.yuxi.runs.length, 2, 'the first run, then one run for both steers');
      assert.deepEqual(new Set(turn.body.yuxi.runs[1].input_ids), new Set([s1.body.input_id, s2.body.input_id]), 'both steers ran in the same run');
    } finally {
      stream.close();
    }
  });

  it('rejects overrides on steer and resolves an omitted mode by the session state', async () => {
    const session = await createSession();
    const overridden = await message(session.id, 'x', { mode: 'steer', model: 'scripted:echo' });
    assert.equal(overridden.status, 422);
    assert.deepEqual(overridden.body.error.details.fields.map((f: any) => f.field), ['events[0].yuxi.model']);

    const idle = (await message(session.id, 'idle auto')).body;
    const stream = await SseStream.open(session.id);
    try {
      await stream.waitForType('agent.session.turn.completed');
      const idleInput = await http(`${API}/sessions/${session.id}/inputs/${idle.input_id}`);
      assert.equal(idleInput.body.mode, 'follow_up');

      await sendMessage(session.id, SLOW);
      const created = await stream.waitFor((e) => e.type === 'agent.session.turn.created' && e.data.turn_id !== idleInput.body.turn_id);
      const busy = (await message(session.id, 'busy auto')).body;
      const busyInput = await http(`${API}/sessions/${session.id}/inputs/${busy.input_id}`);
      assert.equal(busyInput.body.mode, 'steer');
      await stream.waitForType('agent.session.turn.completed', created.data.turn_id);
      const consumed = await http(`${API}/sessions/${session.id}/inputs/${busy.input_id}`);
      assert.equal(consumed.body.turn_id, created.data.turn_id, 'an automatic steer joins the running turn');
    } finally {
      stream.close();
    }
  });

  it('refuses every message while the turn is being cancelled, whatever its mode, and the turn ends cancelled', async () => {
    const { session, stream, turn: created } = await busySession(SLOW);
    try {
      const turnId = created.data.turn_id;
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === turnId);
      // The cancellation window, held open: the cancel is accepted while the worker running the
      // turn is stopped, so the run cannot stop yet.
      await withWorkerStopped(async () => {
        const cancel = await postEvent(session.id, { type: 'agent.session.input.cancel' });
        assert.equal(cancel.status, 202, cancel.text);
        for (const mode of [undefined, 'follow_up', 'steer'] as const) {
          const refused = await message(session.id, `${mode ?? 'auto'} during cleanup`, mode ? { mode } : undefined);
          assert.equal(refused.status, 409, `${mode ?? 'auto'} is refused`);
          assert.equal(refused.body.error.code, 'turn_cancelling');
          assert.equal(refused.body.error.details.turn_id, turnId);
        }
        assert.equal((await http(`${API}/sessions/${session.id}/queue`)).body.data.length, 0, 'nothing was queued');
      });
      const ended = await stream.waitFor(
        (e) => ['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled'].includes(e.type) && e.data.turn_id === turnId,
      );
      assert.equal(ended.type, 'agent.session.turn.cancelled', 'an accepted cancel ends the turn cancelled');
      assert.equal(ended.data.turn.yuxi.waitpoint, null);
    } finally {
      stream.close();
    }
  });

  it('promotes a queued follow-up ahead of the others; repeats are satisfied, consumed inputs are 409', async () => {
    const { session, stream, turn: created } = await busySession(SLOW);
    try {
      const f1 = (await sendMessage(session.id, 'f1')).body;
      const f2 = (await sendMessage(session.id, 'f2')).body;
      const key = newKey('promote');
      const promoted = await promote(session.id, f2.input_id, key);
      assert.equal(promoted.status, 202);
      assert.equal(promoted.body.input_id, f2.input_id);
      const replay = await promote(session.id, f2.input_id, key);
      assert.equal(replay.text, promoted.text);

      await stream.waitForType('agent.session.turn.completed', created.data.turn_id);
      const f2Input = await http(`${API}/sessions/${session.id}/inputs/${f2.input_id}`);
      assert.equal(f2Input.body.mode, 'steer');
      assert.equal(f2Input.body.turn_id, created.data.turn_id, 'the promoted input ran before f1');
      const late = await promote(session.id, f2.input_id);
      assert.equal(late.status, 409);
      const next = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== created.data.turn_id);
      const f1Input = await http(`${API}/sessions/${session.id}/inputs/${f1.input_id}`);
      assert.equal(f1Input.body.turn_id, next.data.turn_id);
      assert.equal((await promote(session.id, '00000000-0000-7000-8000-000000000000')).status, 404);
    } finally {
      stream.close();
    }
  });

  it('runs a steer waiting in an idle session before earlier follow-ups, as the next turn', async () => {
    const queue = new Queue('session-dispatch', { connection: { url: env.redisUrl } });
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      // Hold the workers so both inputs are waiting when the next claim happens.
      await queue.pause();
      const follow = (await message(session.id, 'earlier follow-up', { mode: 'follow_up' })).body;
      const steer = (await message(session.id, 'later steer', { mode: 'steer' })).body;
      const queued = await http(`${API}/sessions/${session.id}/queue`);
      assert.deepEqual(queued.body.data.map((i: any) => i.id), [steer.input_id, follow.input_id], 'claim order: steer first');
      await queue.resume();
      let completed = 0;
      await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ++completed === 2);
      const turns = (await http(`${API}/sessions/${session.id}/turns?order=asc`)).body.data;
      const steerInput = await http(`${API}/sessions/${session.id}/inputs/${steer.input_id}`);
      const followInput = await http(`${API}/sessions/${session.id}/inputs/${follow.input_id}`);
      assert.equal(steerInput.body.turn_id, turns[0].id);
      assert.equal(followInput.body.turn_id, turns[1].id);
    } finally {
      await queue.resume();
      await queue.close();
      stream.close();
    }
  });

  it('lets promote and the worker claim race for an input without a double run', async () => {
    /** Either ending runs the input exactly once: promoted (a steer), or already claimed (409). */
    async function assertRanOnce(sessionId: string, inputId: string, promoted: { status: number; text: string }): Promise<void> {
      const stream = await SseStream.open(sessionId);
      try {
        await stream.waitForType('agent.session.turn.completed');
      } finally {
        stream.close();
      }
      const input = await http(`${API}/sessions/${sessionId}/inputs/${inputId}`);
      assert.equal(input.body.status, 'consumed');
      assert.equal(input.body.mode, promoted.status === 202 ? 'steer' : 'follow_up', 'a promote that won made the input a steer');
      const after = await query(`SELECT count(*)::int AS n FROM runs WHERE $1 = ANY(input_ids)`, [inputId]);
      assert.equal(after[0].n, 1, 'the input ran exactly once');
    }

    // Each winner forced once. The promote first: no worker can claim while it is stopped.
    const early = await createSession();
    const earlyPromote = await withWorkerStopped(async () => {
      const receipt = (await sendMessage(early.id, 'promoted before any claim')).body;
      return { inputId: receipt.input_id as string, res: await promote(early.id, receipt.input_id) };
    });
    assert.equal(earlyPromote.res.status, 202, earlyPromote.res.text);
    await assertRanOnce(early.id, earlyPromote.inputId, earlyPromote.res);
    // The claim first: the promote arrives once the input's turn exists.
    const late = await createSession();
    const lateStream = await SseStream.open(late.id);
    const receipt = (await sendMessage(late.id, 'claimed before the promote')).body;
    await lateStream.waitForType('agent.session.turn.created');
    lateStream.close();
    const latePromote = await promote(late.id, receipt.input_id);
    assert.equal(latePromote.status, 409, latePromote.text);
    await assertRanOnce(late.id, receipt.input_id, latePromote);

    // And raced: whichever wins, the input runs once.
    for (let round = 0; round < 6; round += 1) {
      const session = await createSession();
      const raced = (await sendMessage(session.id, `race ${round}`)).body;
      const res = await promote(session.id, raced.input_id);
      assert.ok(res.status === 202 || res.status === 409, res.text);
      const runs = await query(`SELECT count(*)::int AS n FROM runs WHERE $1 = ANY(input_ids)`, [raced.input_id]);
      assert.ok(runs[0].n <= 1);
      await assertRanOnce(session.id, raced.input_id, res);
    }
  });
});
