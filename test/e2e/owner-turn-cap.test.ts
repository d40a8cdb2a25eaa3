import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { API } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, createSessionAs, newProductUser, until } from '../support/identity.js';

// Running turns per account (fair shares): the suite's worker runs with
// MAX_ACTIVE_TURNS_PER_OWNER=6 (scripts/test.mjs). Fresh users and a fresh app, so nothing else
// counts against them.
const CAP = 6;
const END_USERS = 3;
const PER_END_USER = 3;
const FLOOD = END_USERS * PER_END_USER;
/**
 * A wait before each word of the answer: each of the flood's turns lasts several seconds, so its
 * first turns still run while the rest waits and another owner's turn completes.
 */
const SLOW = '[[delay:3000]]';

interface Seen {
  running: number;
  waiting: number;
  completed: number;
}

/**
 * The app's sessions (all its end users', hence the whole flood) in one list request, one
 * statement and so one snapshot: how many run, wait unstarted, completed.
 */
async function observe(appId: string): Promise<Seen> {
  const res = await call(bootstrap, `${ADMIN}/sessions?limit=100&app_id=${appId}`);
  assert.equal(res.status, 200, res.text);
  const sessions = res.body.data as { yuxi: { current_turn: { status: string } | null; queued_input_count: number } }[];
  assert.equal(sessions.length, FLOOD, 'the flood is listed whole');
  const status = (s: (typeof sessions)[number]): string | undefined => s.yuxi.current_turn?.status;
  return {
    running: sessions.filter((s) => status(s) === 'in_progress' || status(s) === 'queued').length,
    waiting: sessions.filter((s) => s.yuxi.current_turn === null && s.yuxi.queued_input_count > 0).length,
    completed: sessions.filter((s) => status(s) === 'completed').length,
  };
}

describe('active turns per account are capped across the fleet (MAX_ACTIVE_TURNS_PER_OWNER)', () => {
  it("holds one product user's flood (its app's end users together) at the cap, queued and never refused, while another owner's turn runs at once", async () => {
    const appId = `flood-${randomUUID()}`;
    const flooder = await newProductUser('flooding owner', { app_id: appId });
    const other = await newProductUser('another owner');
    // Several end users of one product user's app: each stays under the cap, the account does not.
    // Every input is accepted (201 with its receipt): work past the cap waits, it is not refused.
    const flood = await Promise.all(
      Array.from({ length: FLOOD }, (_, i) => createSessionAs(asEndUser(flooder.caller, `end-user-${i % END_USERS}`), `flood-${i} ${SLOW}`)),
    );
    assert.equal(flood.length, FLOOD);

    // The flood starts its cap of turns and no more; the rest stays queued.
    const atCap = await until(async () => {
      const seen = await observe(appId);
      assert.ok(seen.running <= CAP, `at most ${CAP} of the account's turns run at once, saw ${JSON.stringify(seen)}`);
      return seen.running === CAP ? seen : undefined;
    });
    assert.ok(atCap, 'the account reached its cap of running turns');

    // Another owner is not starved: its turn runs and completes while the flood still has queued work.
    const mine = await createSessionAs(other.caller, 'not starved');
    const done = await until(
      async () => {
        const res = await call(other.caller, `${API}/sessions/${mine.id}`);
        return res.body?.yuxi?.current_turn?.status === 'completed' ? res.body : undefined;
      },
      { attempts: 100, intervalMs: 50 },
    );
    assert.ok(done, "the other owner's turn completed");
    const meanwhile = await observe(appId);
    assert.ok(meanwhile.waiting > 0, `the flood still had queued work when the other owner's turn completed: ${JSON.stringify(meanwhile)}`);
    assert.ok(meanwhile.running <= CAP, JSON.stringify(meanwhile));

    // As the account's turns end, its queued work starts (nudged by the ending turns), never more
    // than the cap at once, and all of it completes.
    const all = await until(
      async () => {
        const seen = await observe(appId);
        assert.ok(seen.running <= CAP, `at most ${CAP} of the account's turns run at once, saw ${JSON.stringify(seen)}`);
        return seen.completed === FLOOD ? seen : undefined;
      },
      { attempts: 300, intervalMs: 100 },
    );
    assert.ok(all, `every one of the account's ${FLOOD} turns completed`);
  });
});
