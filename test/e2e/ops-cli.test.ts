import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { env } from '../support/env.js';
import { API, http, postEvent, sendMessage } from '../support/http.js';
import { busySession } from '../support/scenarios.js';

/** The compiled operator CLI (what `npm run ops` runs), with this suite's DATABASE_URL and REDIS_URL. */
const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../apps/api/src/ops-cli.js');

interface CliResult {
  code: number;
  json: any;
  stderr: string;
}

function ops(...args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, ...args], { env: process.env, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      if (code === -1) return reject(error as Error);
      try {
        resolve({ code, json: stdout.trim() ? JSON.parse(stdout) : null, stderr });
      } catch {
        reject(new Error(`ops ${args.join(' ')} printed no JSON document: ${stdout}\n${stderr}`));
      }
    });
  });
}

/** Many words, one every 200 ms: a turn that runs long enough to be caught while it streams. */
const LONG = `${Array.from({ length: 150 }, (_, i) => `w${i + 1}`).join(' ')} [[delay:200]]`;
const SLOW = 'one two three four five six seven eight nine ten [[delay:80]]';

/** Dispatch jobs of the session waiting in the (paused) session queue. */
async function dispatchJobs(queue: Queue, sessionId: string): Promise<number> {
  const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed']);
  return jobs.filter((job) => job?.data?.sessionId === sessionId).length;
}

describe('operator CLI', () => {
  it('session shows the queue, turns, runs and leases; fail-turn fails a streaming turn for every subscriber; unpause resumes what waited behind it', async () => {
    const { session, stream, turn: created } = await busySession(LONG);
    try {
      const turnId = created.data.turn_id as string;
      const runId = created.data.turn.yuxi.current_run_id as string;
      const queued = (await sendMessage(session.id, 'queued behind the stuck turn')).body;
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === turnId);

      const shown = await ops('session', session.id);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(shown.json.session.id, session.id);
      assert.equal(typeof shown.json.db_now, 'string');
      assert.equal(shown.json.queue.paused, false);
      assert.deepEqual(
        shown.json.queue.pending.map((input: any) => input.id),
        [queued.input_id],
        'the pending input is in the queue',
      );
      const turn = shown.json.turns.find((t: any) => t.id === turnId);
      assert.equal(turn.status, 'in_progress');
      assert.equal(turn.runs.length, 1);
      assert.equal(turn.runs[0].id, runId);
      assert.equal(turn.runs[0].status, 'in_progress');
      assert.equal(typeof turn.runs[0].lease_owner, 'string', 'a worker holds the run');
      assert.ok(turn.runs[0].lease_remaining_ms > 0, `the lease runs on the database clock: ${turn.runs[0].lease_remaining_ms}`);

      const failed = await ops('fail-turn', turnId, '--reason', 'stuck on call');
      assert.equal(failed.code, 0, JSON.stringify(failed.json));
      assert.equal(failed.json.turn_id, turnId);
      assert.equal(failed.json.run_id, runId);
      assert.equal(failed.json.status, 'failed');
      assert.equal(failed.json.error.code, 'operator_failed');
      // The turn had streamed text (kept as an incomplete message): output, and an operator's decision is not retried.
      assert.equal(failed.json.error.side_effects, 'output');
      assert.equal(failed.json.error.retryable, false);
      assert.equal(failed.json.previous_lease_owner, turn.runs[0].lease_owner);
      assert.equal(failed.json.events_published, true);
      assert.equal(failed.json.queue_paused, true, 'what waits behind a failed turn is paused');

      const event = await stream.waitForType('agent.session.turn.failed', turnId);
      assert.equal(event.data.turn.status, 'failed');
      assert.equal(event.data.turn.error.code, 'operator_failed');
      assert.match(event.data.turn.error.message, /stuck on call/);
      const runFailed = stream.events.find((e) => e.type === 'yuxi.session.run.failed' && e.data.run.id === runId);
      assert.equal(runFailed?.data.run.error.code, 'operator_failed');

      // What subscribers saw is what was kept: the streamed text became an incomplete item.
      const failedAt = stream.events.indexOf(event);
      const streamed = stream.events
        .slice(0, failedAt)
        .filter((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === turnId)
        .map((e) => e.data.delta)
        .join('');
      const items = await http(`${API}/sessions/${session.id}/turns/${turnId}/items?order=asc`);
      const partial = items.body.data.find((i: any) => i.role === 'assistant');
      assert.equal(partial.status, 'incomplete');
      assert.equal(partial.content[0].text, streamed);
      const read = await http(`${API}/sessions/${session.id}/turns/${turnId}`);
      assert.equal(read.body.status, 'failed');
      assert.equal(read.body.yuxi.runs[0].status, 'failed');
      const overview = await http(`${API}/sessions/${session.id}`);
      assert.equal(overview.body.yuxi.queue_paused, true);
      assert.equal(overview.body.yuxi.current_turn.id, turnId);
      assert.equal(overview.body.yuxi.current_turn.status, 'failed');

      const again = await ops('fail-turn', turnId);
      assert.equal(again.code, 1);
      assert.equal(again.json.error.code, 'state_conflict');

      const unpaused = await ops('unpause', session.id);
      assert.equal(unpaused.code, 0, JSON.stringify(unpaused.json));
      assert.equal(unpaused.json.queue_paused, false);
      const next = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== turnId, 30_000);
      const input = await http(`${API}/sessions/${session.id}/inputs/${queued.input_id}`);
      assert.equal(input.body.turn_id, next.data.turn_id, 'the queued input ran after the unpause');
      // Nothing of the failed run reached the stream after its turn failed (the fence was raised first).
      assert.ok(
        !stream.events.slice(failedAt).some((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === turnId),
        'no delta of the failed turn after agent.session.turn.failed',
      );
    } finally {
      stream.close();
    }
  });

  it('redispatch nudges a session; unpause resumes a queue paused by a cancel', async () => {
    const queue = new Queue('session-dispatch', { connection: { url: env.redisUrl } });
    const { session, stream, turn: running } = await busySession(SLOW);
    try {
      const x = (await sendMessage(session.id, 'x')).body;
      const y = (await sendMessage(session.id, 'y')).body;
      assert.equal((await postEvent(session.id, { type: 'agent.session.input.cancel' })).status, 202);
      await stream.waitForType('agent.session.turn.cancelled', running.data.turn_id);
      const paused = await ops('session', session.id);
      assert.equal(paused.json.queue.paused, true, 'a cancel with queued inputs pauses the queue');
      assert.deepEqual(
        paused.json.queue.pending.map((input: any) => input.id),
        [x.input_id, y.input_id],
      );

      // The nudges of x and y are consumed (they find the queue paused); bounded.
      // A worker still busy with an earlier file's leftovers can take a while: 30 s at most.
      let left = await dispatchJobs(queue, session.id);
      for (let i = 0; i < 300 && left > 0; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        left = await dispatchJobs(queue, session.id);
      }
      assert.equal(left, 0, 'the nudges of x and y were consumed');
      // Consumption held: the nudge stays in the queue, where it can be seen. Nothing else nudges a
      // paused session (the sweep skips it), so the job is the redispatch's.
      await queue.pause();
      assert.equal(await dispatchJobs(queue, session.id), 0);
      const nudged = await ops('redispatch', session.id);
      assert.equal(nudged.code, 0, JSON.stringify(nudged.json));
      assert.equal(nudged.json.nudged, true);
      assert.deepEqual(nudged.json.takeover_run_ids, []);
      assert.equal(await dispatchJobs(queue, session.id), 1, 'redispatch enqueued a dispatch job');
      await queue.resume();

      const unpaused = await ops('unpause', session.id);
      assert.equal(unpaused.code, 0, JSON.stringify(unpaused.json));
      let completed = 0;
      await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ++completed === 2, 30_000);
      const inputs = await Promise.all([x, y].map((r) => http(`${API}/sessions/${session.id}/inputs/${r.input_id}`)));
      assert.ok(inputs.every((i) => i.body.status === 'consumed'), 'the old queue ran after the unpause');

      const notPaused = await ops('unpause', session.id);
      assert.equal(notPaused.code, 1);
      assert.equal(notPaused.json.error.code, 'state_conflict');
    } finally {
      await queue.resume();
      await queue.close();
      stream.close();
    }
  });

  it('answers unknown ids with not_found and a bad command line with its usage', async () => {
    const missing = '00000000-0000-7000-8000-000000000000';
    for (const args of [['session', missing], ['unpause', missing], ['redispatch', missing], ['fail-turn', missing], ['session', 'not-a-uuid']]) {
      const result = await ops(...args);
      assert.equal(result.code, 1, args.join(' '));
      assert.equal(result.json.error.code, 'not_found', args.join(' '));
    }
    const usage = await ops('frobnicate', missing);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage:/);
  });
});
