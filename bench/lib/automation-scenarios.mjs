// The bench's automations scenario (bench/run.mjs): fire lag under 1,000 active automations, each a
// 6-field periodic expression, spread over the seconds of its period so the fires are even.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { round, summarize, watch } from './measure.mjs';

export function automationScenarios({ stack, client, pids, log }) {
  return { automations };

  /**
   * `count` active automations created through the public API, each every `periodS` seconds
   * (`<s>/<periodS> * * * * *`, or `<s> * * * * *` once a minute; s = i mod periodS) targeting a new session of the echo agent. One
   * period after they are all created (each has fired once, so every timer in the window was armed
   * by the worker after a fire: the steady state), a window of `windowS` seconds: every scheduled time in it is read back
   * through the invocations API (status, skip counts); the lag of each fire (the invocation's
   * `fired_at` − its `scheduled_at`) is read from `automation_invocations` at millisecond precision
   * (the API gives Unix seconds). Then the automations are paused and deleted (their invocations go
   * with them; the sessions they created stay).
   */
  async function automations(count = 1000, periodS = 30, windowS = 60) {
    log(`automations: creating ${count} (every ${periodS} s each)…`);
    const created = await inBatches(count, 25, async (i) => {
      const body = {
        name: `bench ${i}`,
        type: 'periodic',
        expression: periodS === 60 ? `${i % 60} * * * * *` : `${i % periodS}/${periodS} * * * * *`,
        timezone: 'UTC',
        target: { type: 'new_session', agent_id: 'default-chatbot', environment: { type: 'none' }, input: [{ type: 'message', role: 'user', content: 'bench tick' }] },
      };
      const res = await call('POST', '/automations', body, { 'idempotency-key': randomUUID() });
      if (res.status !== 201) throw new Error(`create automation: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.id;
    });
    // The window starts on a whole second one period after the last create, so every automation is
    // active through all of it; it covers windowS / periodS scheduled times of each.
    const fromS = Math.ceil(Date.now() / 1000) + periodS;
    const toS = fromS + windowS;
    const expected = count * (windowS / periodS);
    await sleep(fromS * 1000 - Date.now());
    log(`automations: ${count} active; one period (${periodS} s), then measuring ${windowS} s…`);
    const w = watch(pids);
    await sleep(toS * 1000 - Date.now());
    const usage = w.stop();

    // Every scheduled time of the window is recorded within a bounded wait (fires still in flight).
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    let recorded = 0;
    for (let tries = 0; tries < 60; tries += 1) {
      recorded = (await db.query('SELECT count(*)::int AS n FROM automation_invocations WHERE automation_id = ANY($1) AND scheduled_at >= to_timestamp($2) AND scheduled_at < to_timestamp($3)', [created, fromS, toS])).rows[0].n;
      if (recorded >= expected) break;
      await sleep(500);
    }
    const lags = (
      await db.query(
        `SELECT extract(epoch FROM fired_at - scheduled_at) * 1000 AS lag_ms FROM automation_invocations
          WHERE automation_id = ANY($1) AND scheduled_at >= to_timestamp($2) AND scheduled_at < to_timestamp($3) AND fired_at IS NOT NULL`,
        [created, fromS, toS],
      )
    ).rows.map((row) => Number(row.lag_ms));
    await db.end();

    log('automations: reading the invocations back through the API…');
    await inBatches(created.length, 25, (i) => call('POST', `/automations/${created[i]}/pause`, {}));
    const statuses = { completed: 0, queued: 0, failed: 0, skipped: 0 };
    const reasons = {};
    let seen = 0;
    await inBatches(created.length, 25, async (i) => {
      const res = await call('GET', `/automations/${created[i]}/invocations?limit=100`);
      if (res.status !== 200) throw new Error(`invocations: ${res.status} ${JSON.stringify(res.body)}`);
      for (const invocation of res.body.data) {
        if (invocation.scheduled_at === null || invocation.scheduled_at < fromS || invocation.scheduled_at >= toS) continue;
        seen += 1;
        statuses[invocation.status] = (statuses[invocation.status] ?? 0) + 1;
        reasons[invocation.yuxi.reason] = (reasons[invocation.yuxi.reason] ?? 0) + 1;
      }
    });
    await inBatches(created.length, 25, (i) => call('DELETE', `/automations/${created[i]}`));

    const lag = summarize(lags);
    const fires = lags.length;
    return {
      description: `${count} active automations (6-field, every ${periodS} s, spread over the seconds), target new_session of the echo agent; a ${windowS} s window`,
      automations: count,
      period_s: periodS,
      window_s: windowS,
      scheduled_times: expected,
      recorded_times: recorded,
      lost_times: Math.max(0, expected - recorded),
      invocations_read_via_api: seen,
      fires,
      skips: statuses.skipped,
      failed: statuses.failed,
      statuses,
      reasons,
      fires_per_s: round(fires / windowS),
      fire_lag_ms: lag,
      ...usage,
      target: 'every scheduled time recorded once, fire lag p99 ≤ 1,000 ms',
      met: recorded === expected && seen === expected && lag.p99 <= 1000,
    };
  }

  async function call(method, path, body, headers = {}) {
    const res = await fetch(`${client.api}${path}`, { method, headers: client.headers(headers), body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
}

/** Runs fn(0..n-1), `width` at a time; the results in order. */
async function inBatches(n, width, fn) {
  const out = [];
  for (let start = 0; start < n; start += width) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(width, n - start) }, (_, k) => fn(start + k)))));
  }
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
