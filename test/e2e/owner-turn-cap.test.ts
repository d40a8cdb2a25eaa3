import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API } from '../support/http.js';
import { call, type Caller, createSessionAs, newProductUser, until } from '../support/identity.js';

// Running turns per owner (issue 35 "fair shares"): the suite's worker runs with
// MAX_ACTIVE_TURNS_PER_OWNER=6 (scripts/test.mjs). Fresh users, so nothing else counts against them.
const CAP = 6;
const FLOOD = CAP + 3;
/** One word, so one wait of 2.5 s per turn: the flood's first turns still run while the rest waits and another owner's turn completes. */
const SLOW = '[[delay:2500]]';

interface Seen {
  running: number;
  waiting: number;
  completed: number;
}

/** One list request (one statement, so one snapshot) of the owner's sessions: how many run, wait unstarted, completed. */
async function observe(caller: Caller): Promise<Seen> {
  const res = await call(caller, `${API}/sessions?limit=100`);
  assert.equal(res.status, 200, res.text);
  const sessions = res.body.data as { yuxi: { current_turn: { status: string } | null; queued_input_count: number } }[];
  const status = (s: (typeof sessions)[number]): string | undefined => s.yuxi.current_turn?.status;
  return {
    running: sessions.filter((s) => status(s) === 'in_progress' || status(s) === 'queued').length,
    waiting: sessions.filter((s) => s.yuxi.current_turn === null && s.yuxi.queued_input_count > 0).length,
    completed: sessions.filter((s) => status(s) === 'completed').length,
  };
}

describe('active turns per owner are capped across the fleet (MAX_ACTIVE_TURNS_PER_OWNER)', () => {
  it("holds one owner's flood at the cap, queued and never refused, while another owner's turn runs at once", async () => {
    const flooder = await newProductUser('flooding owner');
    const other = await newProductUser('another owner');
    // Every input is accepted (201 with its receipt): work past the cap waits, it is not refused.
    const flood = await Promise.all(Array.from({ length: FLOOD }, (_, i) => createSessionAs(flooder.caller, `flood-${i} ${SLOW}`)));
    assert.equal(flood.length, FLOOD);

    // The flood starts its cap of turns and no more; the rest stays queued.
    const atCap = await until(async () => {
      const seen = await observe(flooder.caller);
      assert.ok(seen.running <= CAP, `at most ${CAP} of the owner's turns run at once, saw ${JSON.stringify(seen)}`);
      return seen.running === CAP ? seen : undefined;
    });
    assert.ok(atCap, 'the owner reached its cap of running turns');
    assert.equal(atCap.waiting, FLOOD - CAP, `the rest waits queued: ${JSON.stringify(atCap)}`);

    // Another owner is not starved: its turn runs and completes while the flood still has queued work.
    const mine = await createSessionAs(other.caller, 'not starved');
    const done = await until(async () => {
      const res = await call(other.caller, `${API}/sessions/${mine.id}`);
      return res.body?.yuxi?.current_turn?.status === 'completed' ? res.body : undefined;
    });
    assert.ok(done, "the other owner's turn completed");
    const meanwhile = await observe(flooder.caller);
    assert.ok(meanwhile.waiting > 0, `the flood still had queued work when the other owner's turn completed: ${JSON.stringify(meanwhile)}`);
    assert.ok(meanwhile.running <= CAP, JSON.stringify(meanwhile));

    // As the owner's turns end, its queued work starts (nudged by the ending turns), never more than
    // the cap at once, and all of it completes.
    const all = await until(
      async () => {
        const seen = await observe(flooder.caller);
        assert.ok(seen.running <= CAP, `at most ${CAP} of the owner's turns run at once, saw ${JSON.stringify(seen)}`);
        return seen.completed === FLOOD ? seen : undefined;
      },
      { attempts: 300, intervalMs: 100 },
    );
    assert.ok(all, `every one of the owner's ${FLOOD} turns completed`);
  });
});
