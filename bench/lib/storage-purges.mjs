// The purges the storage scenario runs after deleting its sessions (bench/lib/storage-scenarios.mjs,
// issue 43): each `{ name, run: async ({ db, redis, stack, sessionIds }) => result }`.
import { setTimeout as sleep } from 'node:timers/promises';

import { round } from './measure.mjs';

/**
 * The `deleted_sessions` retention task (issue 43), as a purge of the scenario: the lifecycle clock
 * is moved past SESSION_PURGE_AFTER_S (the bench stack lets it move), the worker's retention sweep
 * (every RETENTION_SWEEP_MS, the deployment's default) purges the deleted sessions, and this polls
 * (every second, at most `maxWaitS`) until none of their rows is left; the clock is put back.
 */
export function deletedSessionsPurge(client, { purgeAfterS = 7 * 24 * 3600, maxWaitS = 600 } = {}) {
  return {
    name: 'deleted_sessions (the lifecycle clock moved past SESSION_PURGE_AFTER_S)',
    run: async ({ db, sessionIds }) => {
      const started = performance.now();
      await setLifecycleClock(client, purgeAfterS + 3600);
      try {
        let left = sessionIds.length;
        for (let waited = 0; waited < maxWaitS && left > 0; waited += 1) {
          left = (await db.query(`SELECT count(*)::int AS n FROM sessions WHERE id = ANY($1::uuid[])`, [sessionIds])).rows[0].n;
          if (left > 0) await sleep(1_000);
        }
        if (left > 0) throw new Error(`purge: ${left} of ${sessionIds.length} deleted sessions still there after ${maxWaitS} s`);
        return { sessions_purged: sessionIds.length, wall_s: round((performance.now() - started) / 1000, 1) };
      } finally {
        await setLifecycleClock(client, 0);
      }
    },
  };
}

async function setLifecycleClock(client, offsetS) {
  const res = await fetch(`${client.baseUrl}/api/v1/admin/lifecycle-clock`, { method: 'PUT', headers: client.headers(), body: JSON.stringify({ offset_s: offsetS }) });
  if (res.status !== 200) throw new Error(`lifecycle clock: ${res.status} ${await res.text()}`);
  await res.body?.cancel();
}


/**
 * Before the deletions: what the live sessions keep once what only resume needs has aged out (the
 * issue's target). The lifecycle clock is moved past EVENTS_REPLAY_TTL_SECONDS (the outbox prune of
 * the worker's recovery sweep goes by it), and this polls (every second, at most `maxWaitS`) until
 * each session keeps only its newest outbox row; the clock is put back. Idempotency receipts expire
 * by real time (their expiry is the idempotency promise), so they are still there: the report shows
 * the figures without them too.
 */
export function outboxAgeOut(client, { replayTtlS = 7 * 24 * 3600, maxWaitS = 120 } = {}) {
  return {
    name: 'outbox past the replay window (the lifecycle clock moved past EVENTS_REPLAY_TTL_SECONDS)',
    run: async ({ db, sessionIds }) => {
      const started = performance.now();
      await setLifecycleClock(client, replayTtlS + 3600);
      try {
        let rows = Infinity;
        for (let waited = 0; waited < maxWaitS && rows > sessionIds.length; waited += 1) {
          rows = (await db.query(`SELECT count(*)::int AS n FROM session_events WHERE session_id = ANY($1::uuid[])`, [sessionIds])).rows[0].n;
          if (rows > sessionIds.length) await sleep(1_000);
        }
        if (rows > sessionIds.length) throw new Error(`age-out: ${rows} outbox rows of ${sessionIds.length} sessions still there after ${maxWaitS} s`);
        return { outbox_rows_left: rows, wall_s: round((performance.now() - started) / 1000, 1) };
      } finally {
        await setLifecycleClock(client, 0);
      }
    },
  };
}
