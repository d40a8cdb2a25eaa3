import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Job, Queue } from 'bullmq';
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
      // The nudge follows the commit without delaying the response: wait for it (bounded).
      let jobs: Job[] = [];
      for (let i = 0; i < 100 && jobs.length === 0; i += 1) {
        jobs = (await queue.getJobs(['waiting', 'prioritized', 'delayed'])).filter((job) => job?.data?.sessionId === session.id);
        if (jobs.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(jobs.length, 1, 'the submission enqueued one nudge');
      const lost = jobs[0]!;
      await lost.remove();
      // Only the removed job is checked: once the input is older than the grace, the sweep may
      // already have enqueued its replacement (which is what this test is about).
      assert.equal(await queue.getJob(lost.id!), undefined, 'the nudge is gone');
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
});
