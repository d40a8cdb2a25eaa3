import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { DueStore } from '#libs/automations';
import { dataSourceOptions } from '#libs/database';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { call, type Caller, newProductUser } from '../support/identity.js';
import { scrape, total } from '../support/metrics.js';

// Automations on the real stack, by the clock: the worker's timers fire each scheduled time (the
// suite's sweep runs every second behind them), each fire a new session whose turn completes. Every
// wait is a bounded poll of a condition; no test sleeps for a guessed time.

const AUTOMATIONS = `${API}/automations`;
const TERMINAL_TURN = new Set(['completed', 'failed', 'cancelled']);

/** Polls `probe` every `intervalMs` until it returns a value other than undefined; fails after `timeoutMs`. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt <= timeoutMs / intervalMs + 10; attempt++) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

function newSessionTarget(text: string): Record<string, unknown> {
  return { type: 'new_session', agent_id: 'default-chatbot', input: [{ role: 'user', content: text }] };
}

describe('automations on the clock', () => {
  /** Every automation a test made, deleted at the end so nothing keeps firing for the rest of the suite. */
  const made: { caller: Caller; id: string }[] = [];
  after(async () => {
    for (const { caller, id } of made) await call(caller, `${AUTOMATIONS}/${id}`, { method: 'DELETE' });
  });

  async function create(caller: Caller, body: Record<string, unknown>): Promise<any> {
    const res = await call(caller, AUTOMATIONS, { body, idempotencyKey: newKey('automation') });
    assert.equal(res.status, 201, res.text);
    made.push({ caller, id: res.body.id });
    return res.body;
  }

  /** Every invocation of the automation, oldest first. */
  async function invocations(caller: Caller, id: string): Promise<any[]> {
    const all: any[] = [];
    for (let after: string | null = null, page = 0; page < 20; page++) {
      const res: { status: number; text: string; body: any } = await call(caller, `${AUTOMATIONS}/${id}/invocations?order=asc&limit=100${after ? `&after=${after}` : ''}`);
      assert.equal(res.status, 200, res.text);
      all.push(...res.body.data);
      if (!res.body.has_more) return all;
      after = res.body.last_id;
    }
    throw new Error('more than 20 pages of invocations');
  }

  async function turnEnds(caller: Caller, sessionId: string, turnId: string): Promise<any> {
    return waitFor(`turn ${turnId} to end`, async () => {
      const res = await call(caller, `${API}/sessions/${sessionId}/turns/${turnId}`);
      return res.status === 200 && TERMINAL_TURN.has(res.body.status) ? res.body : undefined;
    });
  }

  /** Scheduled times (Unix s) in order, each present once, every step between them the schedule's period: fired or skipped, none missing. */
  function assertOnGrid(items: any[], periodS: number, what: string): void {
    const times = items.map((v) => v.scheduled_at as number).sort((a, b) => a - b);
    assert.equal(new Set(times).size, times.length, `${what}: no scheduled time twice: ${times.join(',')}`);
    for (const t of times) assert.equal(t % periodS, 0, `${what}: ${t} is on the ${periodS}-second grid`);
    for (let i = 1; i < times.length; i++) assert.equal(times[i]! - times[i - 1]!, periodS, `${what}: every time between ${times[0]} and ${times.at(-1)} recorded: ${times.join(',')}`);
  }

  it('a 6-field every-two-seconds automation fires new sessions whose turns complete, each invocation linked, each scheduled time once on the grid', { timeout: 90_000 }, async () => {
    const { caller } = await newProductUser('automation clock');
    const automation = await create(caller, { name: 'every two seconds', type: 'periodic', expression: '*/2 * * * * *', timezone: 'UTC', target: newSessionTarget('tick') });
    assert.equal(automation.status, 'active');
    assert.equal(automation.yuxi.next_run_at % 2, 0, 'the first time is on the grid');

    const fired = await waitFor(
      'three fired invocations',
      async () => {
        const all = await invocations(caller, automation.id);
        const done = all.filter((v) => v.status === 'completed');
        return done.length >= 3 ? all : undefined;
      },
      60_000,
    );
    const paused = await call(caller, `${AUTOMATIONS}/${automation.id}/pause`, { method: 'POST' });
    assert.equal(paused.status, 200, paused.text);

    const all = await invocations(caller, automation.id);
    assertOnGrid(all, 2, 'every-two-seconds automation');
    assert.ok(all.length >= fired.length);
    const completed = all.filter((v) => v.status === 'completed');
    const sessions = new Set<string>();
    for (const v of completed) {
      assert.equal(v.automation_id, automation.id);
      assert.equal(v.source.type, 'automation', 'a scheduled fire says its source');
      assert.ok(['scheduled', 'catch_up'].includes(v.yuxi.reason), `reason ${v.yuxi.reason}`);
      assert.ok(v.session_id && v.yuxi.input_id && v.yuxi.turn_id, `linked to its session, input and turn: ${JSON.stringify(v)}`);
      assert.ok(v.yuxi.fired_at >= v.scheduled_at, 'fired at or after its time');
      sessions.add(v.session_id);
      const turn = await turnEnds(caller, v.session_id, v.yuxi.turn_id);
      assert.equal(turn.status, 'completed', `the fired turn completed: ${JSON.stringify(turn.error ?? null)}`);
      const session = await call(caller, `${API}/sessions/${v.session_id}`);
      assert.equal(session.status, 200, 'the new session is the owner\'s');
    }
    assert.equal(sessions.size, completed.length, 'each fire started a session of its own');
    // A time not fired is recorded with why (the previous turn still active, or missed), never lost.
    for (const v of all.filter((v) => v.status === 'skipped')) assert.ok(['pending_delivery', 'missed'].includes(v.skip_reason), JSON.stringify(v));
  });

  it('invocation retention deletes the oldest records beyond the kept number, a bounded batch at a time, and keeps the newest', { timeout: 60_000 }, async () => {
    const { caller } = await newProductUser('automation retention');
    const automation = await create(caller, { name: 'kept', type: 'once', run_at: Math.floor(Date.now() / 1000) + 86_400, target: newSessionTarget('run now') });
    const runs: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await call(caller, `${AUTOMATIONS}/${automation.id}/invocations`, { method: 'POST', idempotencyKey: newKey('run-now') });
      assert.equal(res.status, 201, res.text);
      runs.push(res.body.id);
    }
    // The sweep's retention, run here on the suite's database as a worker with AUTOMATION_INVOCATIONS_KEPT=2
    // would run it, over this automation alone: the round starts just before its id and takes one automation.
    const dataSource = new DataSource(dataSourceOptions(env.databaseUrl, 1));
    await dataSource.initialize();
    try {
      const store = new DueStore(dataSource);
      const justBefore = uuidBefore(automation.id);
      const first = await store.pruneInvocations(justBefore, 1, 2, 1);
      assert.deepEqual(first, { last: automation.id, deleted: 1 }, 'a batch of one deletes one row');
      assert.deepEqual((await invocations(caller, automation.id)).map((v) => v.id), runs.slice(1), 'the oldest went first');
      assert.deepEqual(await store.pruneInvocations(justBefore, 1, 2, 500), { last: automation.id, deleted: 1 });
      assert.deepEqual((await invocations(caller, automation.id)).map((v) => v.id), runs.slice(2), 'the two newest are kept');
      assert.deepEqual(await store.pruneInvocations(justBefore, 1, 2, 500), { last: automation.id, deleted: 0 }, 'nothing beyond the kept number is left');
    } finally {
      await dataSource.destroy();
    }
  });

  it('a once automation fires once at its time and ends completed', { timeout: 60_000 }, async () => {
    const { caller } = await newProductUser('automation once');
    const runAt = Math.floor(Date.now() / 1000) + 2;
    const automation = await create(caller, { name: 'once', type: 'once', run_at: runAt, target: newSessionTarget('just once') });
    assert.equal(automation.yuxi.next_run_at, runAt);

    const done = await waitFor('the once automation to complete', async () => {
      const res = await call(caller, `${AUTOMATIONS}/${automation.id}`);
      assert.equal(res.status, 200, res.text);
      return res.body.status === 'completed' ? res.body : undefined;
    });
    assert.equal(done.yuxi.next_run_at, null, 'a completed automation has no next time');
    // The invocation's turn is its input's, linked once a worker has started the input (on a loaded machine, after the fire).
    const all = await waitFor('the fired input to have its turn', async () => {
      const list = await invocations(caller, automation.id);
      return list.length !== 1 || list[0].yuxi.turn_id ? list : undefined;
    });
    assert.equal(all.length, 1, `one invocation: ${JSON.stringify(all)}`);
    assert.equal(all[0].scheduled_at, runAt);
    assert.equal(all[0].status, 'completed');
    const turn = await turnEnds(caller, all[0].session_id, all[0].yuxi.turn_id);
    assert.equal(turn.status, 'completed');
  });

  it('pause stops the fires (no scheduled time after the pause) and resume restarts them', { timeout: 90_000 }, async () => {
    const { caller } = await newProductUser('automation pause');
    const automation = await create(caller, { name: 'paused one', type: 'periodic', expression: '* * * * * *', timezone: 'UTC', target: newSessionTarget('paused?') });
    await waitFor('a first fire', async () => ((await invocations(caller, automation.id)).some((v) => v.status === 'completed') ? true : undefined));

    const paused = await call(caller, `${AUTOMATIONS}/${automation.id}/pause`, { method: 'POST' });
    assert.equal(paused.status, 200, paused.text);
    const pausedAtMs = Date.now();
    assert.equal(paused.body.status, 'paused');
    assert.equal(paused.body.yuxi.next_run_at, null);
    const before = await invocations(caller, automation.id);

    // Time passes on the clock the fires run by: a second automation, every second, fires at least
    // three times after the pause; the paused one must have fired none of them.
    const control = await create(caller, { name: 'control', type: 'periodic', expression: '* * * * * *', timezone: 'UTC', target: newSessionTarget('control') });
    await waitFor('three control fires after the pause', async () => {
      const fires = (await invocations(caller, control.id)).filter((v) => v.scheduled_at * 1000 > pausedAtMs);
      return fires.length >= 3 ? true : undefined;
    });
    await call(caller, `${AUTOMATIONS}/${control.id}/pause`, { method: 'POST' });
    const whilePaused = await invocations(caller, automation.id);
    assert.deepEqual(
      whilePaused.map((v) => v.id),
      before.map((v) => v.id),
      'nothing recorded while paused',
    );
    for (const v of whilePaused) assert.ok(v.scheduled_at * 1000 <= pausedAtMs, `no scheduled time after the pause: ${v.scheduled_at}`);

    const resumed = await call(caller, `${AUTOMATIONS}/${automation.id}/resume`, { method: 'POST' });
    assert.equal(resumed.status, 200, resumed.text);
    const resumedAtMs = Date.now();
    assert.equal(resumed.body.status, 'active');
    assert.ok(resumed.body.yuxi.next_run_at * 1000 > pausedAtMs, 'the next time is after the pause');
    const after = await waitFor('a fire after the resume', async () => {
      const fires = (await invocations(caller, automation.id)).filter((v) => v.scheduled_at * 1000 >= resumedAtMs - 1000 && v.status === 'completed');
      return fires.length >= 1 ? fires : undefined;
    });
    assert.ok(after[0].scheduled_at >= resumed.body.yuxi.next_run_at, 'it fires from its new next time on');
    // The paused times were not caught up on resume: nothing between the pause and the resume.
    const all = await invocations(caller, automation.id);
    for (const v of all) assert.ok(v.scheduled_at * 1000 <= pausedAtMs || v.scheduled_at >= resumed.body.yuxi.next_run_at, `no time of the pause recorded: ${v.scheduled_at}`);
  });
  it('the worker\'s gauges: the sweep counts the active automations, and a time whose timer was lost as due until it fires it', { timeout: 60_000 }, async () => {
    const worker = (): ReturnType<typeof scrape> => scrape(env.workerHealthUrl);
    const { caller } = await newProductUser('automation gauges');
    const before = await worker();
    const runAt = Math.floor(Date.now() / 1000) + 4;
    const created = await call(caller, AUTOMATIONS, { body: { name: 'lost timer', type: 'once', run_at: runAt, target: newSessionTarget('a time whose timer was lost') }, idempotencyKey: randomUUID() });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    made.push({ caller, id });
    // The timer lost as Redis loses it (its delayed job removed): only the sweep can fire this time now.
    const queue = new Queue('automations', { connection: { url: env.redisUrl } });
    try {
      const armed = await waitFor('the timer armed', async () => {
        const jobs = (await queue.getDelayed()).filter((job) => job.id?.startsWith(`${id}@`));
        return jobs.length > 0 ? jobs : undefined;
      });
      for (const job of armed) await queue.remove(job.id!);
    } finally {
      await queue.close();
    }
    await waitFor('the sweep counting the active automation', async () => (total(await worker(), 'yuxi_automations_active') > total(before, 'yuxi_automations_active') ? true : undefined));
    // The sweep leaves a due time to its timer for a few seconds, counting it as due meanwhile.
    await waitFor('the sweep counting the time as due', async () => (total(await worker(), 'yuxi_automations_due') > total(before, 'yuxi_automations_due') ? true : undefined), 20_000, 100);
    const fired = await waitFor('the sweep firing it', async () => {
      const page = await call(caller, `${AUTOMATIONS}/${id}/invocations`);
      return page.body?.data?.length === 1 ? page.body.data[0] : undefined;
    });
    assert.equal(fired.scheduled_at, runAt);
    assert.equal(fired.status, 'completed');
  });
});

/** The UUID one below `id` (none lies between them): a retention round after it starts at `id`. */
function uuidBefore(id: string): string {
  const hex = (BigInt(`0x${id.replaceAll('-', '')}`) - 1n).toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
