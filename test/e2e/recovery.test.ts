import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { API, createSession, http, sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';

describe('recovery sweep', () => {
  it('runs an accepted input whose dispatch job vanished', async () => {
    const queue = new Queue('session-dispatch', { connection: { url: env.redisUrl } });
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      // Hold consumption so the nudge can be removed before any worker takes it.
      await queue.pause();
      const receipt = (await sendMessage(session.id, 'lost nudge')).body;
      const jobs = (await queue.getJobs(['waiting', 'prioritized', 'delayed'])).filter((job) => job?.data?.sessionId === session.id);
      assert.equal(jobs.length, 1, 'the submission enqueued one nudge');
      await jobs[0]!.remove();
      const remaining = (await queue.getJobs(['waiting', 'prioritized', 'delayed'])).filter((job) => job?.data?.sessionId === session.id);
      assert.equal(remaining.length, 0, 'the nudge is gone');
      const pending = await query(`SELECT status FROM inputs WHERE id = $1`, [receipt.input_id]);
      assert.equal(pending[0].status, 'pending');
      await queue.resume();

      const completed = await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
      const turn = await http(`${API}/sessions/${session.id}/turns/${completed.data.turn_id}`);
      assert.equal(turn.body.yuxi.output[0].content[0].text, 'Echo: lost nudge');
      assert.deepEqual(turn.body.yuxi.runs[0].input_ids, [receipt.input_id]);
    } finally {
      await queue.resume();
      await queue.close();
      stream.close();
    }
  });

  it('fails a run whose lease expired and moves on to the next input', async () => {
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      // What a worker that died mid-turn leaves behind: its claim committed (turn, run, session
      // overview), and then nobody renews the lease.
      const turnId = randomUUID();
      await query(
        `INSERT INTO turns (id, session_id, seq, status, agent_id, model, created_at, started_at)
         VALUES ($2, $1, 1, 'in_progress', 'default-chatbot', 'scripted:echo', now(), now())`,
        [session.id, turnId],
      );
      await query(
        `INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, lease_owner, lease_expires_at, created_at, started_at)
         VALUES (gen_random_uuid(), $2, $1, 1, 'in_progress', '{}', 'scripted:echo', '{}', 'dead-worker', now() - interval '1 minute', now(), now())`,
        [session.id, turnId],
      );
      await query(
        `UPDATE sessions SET turn_seq = 1, current_turn = jsonb_build_object('id', $2::text, 'status', 'in_progress',
           'current_run_id', null, 'result_run_id', null, 'waitpoint', null) WHERE id = $1`,
        [session.id, turnId],
      );
      await sendMessage(session.id, 'after the crash');
      const failed = await stream.waitForType('agent.session.turn.failed', undefined, 20_000);
      assert.equal(failed.data.turn.error.code, 'run_lease_expired');
      const next = await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
      assert.notEqual(next.data.turn_id, failed.data.turn_id);
      const turns = await http(`${API}/sessions/${session.id}/turns?order=asc`);
      assert.deepEqual(turns.body.data.map((t: any) => t.status), ['failed', 'completed']);
    } finally {
      stream.close();
    }
  });
});
