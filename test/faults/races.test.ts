// Fault scenarios f, g: races under concurrency rather than dead processes. A cancel racing the
// turn it targets must end in one consistent outcome, 200 times over; and 800 inputs submitted
// concurrently through two api processes to two workers must each run exactly once, in order.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Api } from './client.js';
import { assertInvariants, Cluster, echoOf, type FaultInfra, startFaultInfra, waitQuiescent, waitUntil } from './harness.js';

/** Runs `fn` over `items` with at most `limit` in flight. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  });
  await Promise.all(lanes);
  return results;
}

interface SessionState {
  queue_paused: boolean;
  pending: number;
  active: number;
}

describe('faults: races', () => {
  let infra: FaultInfra;
  before(async () => {
    infra = await startFaultInfra('races');
  });
  after(async () => {
    await infra?.stop();
  });

  async function sessionState(sessionId: string): Promise<SessionState> {
    const { rows } = await infra.db.query(
      `SELECT s.queue_paused,
              (SELECT count(*) FROM inputs WHERE session_id = s.id AND status = 'pending')::int AS pending,
              (SELECT count(*) FROM turns WHERE session_id = s.id AND status IN ('queued', 'in_progress', 'requires_action'))::int AS active
       FROM sessions s WHERE s.id = $1`,
      [sessionId],
    );
    return rows[0] as SessionState;
  }

  /** No active turn, and nothing pending unless the queue is paused. */
  function settled(sessionId: string, what: string): Promise<SessionState> {
    return waitUntil(
      what,
      async () => {
        const state = await sessionState(sessionId);
        return state.active === 0 && (state.pending === 0 || state.queue_paused) ? state : null;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
  }

  async function turnStatus(turnId: string): Promise<string | undefined> {
    const { rows } = await infra.db.query(`SELECT status FROM turns WHERE id = $1`, [turnId]);
    return rows[0]?.status;
  }

  it('f. cancel racing completion, 200 times: each outcome is consistent (cancelled → paused queue resumes with continue; completed/409 → not paused)', { timeout: 180_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'f-cancel-race', { apis: 1, workers: 1 });
    try {
      const api = cluster.api();
      const ITERATIONS = 200;
      const LANES = 20;
      const outcomes = { cancelledFirst: 0, cancelledSecond: 0, completedDespiteCancel: 0, conflict: 0, resumedWithContinue: 0 };
      const sessions: string[] = [];
      for (let i = 0; i < LANES; i++) sessions.push((await api.createSession()).id);
      const started = Date.now();

      const iteration = async (sessionId: string, n: number) => {
        const label = `iteration ${n} (session ${sessionId})`;
        // Even iterations: no delay (the turn usually ends before the cancel lands); odd ones: a
        // few ms per word, so the cancel also lands mid-model and at the settle.
        const texts = [`race ${n} first`, `race ${n} second`].map((text) => (n % 2 ? `${text} [[delay:5]]` : text));
        const first = await api.send(sessionId, texts[0]!);
        const second = await api.send(sessionId, texts[1]!);
        const firstInput = await api.input(sessionId, first.input_id);
        const knownTurn: string | null = firstInput.body?.turn_id ?? null;
        const cancel = await api.postEvent(sessionId, { type: 'agent.session.input.cancel', ...(knownTurn ? { yuxi: { turn_id: knownTurn } } : {}) });
        let cancelledTurn: string | null = null;
        if (cancel.status === 202) {
          assert.ok(cancel.body?.turn_id, `${label}: an accepted cancel names its turn: ${cancel.text}`);
          if (knownTurn) assert.equal(cancel.body.turn_id, knownTurn, `${label}: the cancel targets the named turn`);
        } else {
          assert.equal(cancel.status, 409, `${label}: a cancel is accepted or refused as a conflict: ${cancel.status} ${cancel.text}`);
          assert.equal(cancel.body?.error?.code, 'state_conflict', `${label}: 409 code`);
          outcomes.conflict += 1;
        }

        let state = await settled(sessionId, `${label} to settle`);
        if (cancel.status === 202) {
          const target = cancel.body.turn_id as string;
          const status = await turnStatus(target);
          assert.ok(status === 'cancelled' || status === 'completed', `${label}: the targeted turn ended cancelled or completed, not ${status}`);
          if (status === 'cancelled') {
            cancelledTurn = target;
            const { rows } = await infra.db.query(`SELECT id FROM inputs WHERE turn_id = $1`, [target]);
            if (rows.some((r) => r.id === first.input_id)) outcomes.cancelledFirst += 1;
            else outcomes.cancelledSecond += 1;
          } else {
            outcomes.completedDespiteCancel += 1;
            assert.equal(state.queue_paused, false, `${label}: a cancel that lost to completion leaves the queue running`);
          }
        } else {
          assert.equal(state.queue_paused, false, `${label}: a refused cancel leaves the queue running`);
        }

        const read = await api.session(sessionId);
        assert.equal(read.body?.yuxi?.queue_paused, state.queue_paused, `${label}: the session resource shows the pause flag`);
        if (state.queue_paused) {
          assert.ok(cancelledTurn, `${label}: only a cancelled turn pauses the queue`);
          assert.ok(state.pending > 0, `${label}: an empty queue is not paused`);
          const resume = await api.postEvent(sessionId, { type: 'yuxi.session.input.continue' });
          assert.equal(resume.status, 202, `${label}: continue: ${resume.text}`);
          outcomes.resumedWithContinue += 1;
          state = await settled(sessionId, `${label} to settle after continue`);
          assert.equal(state.queue_paused, false);
        } else if (cancelledTurn) {
          assert.equal(state.pending, 0, `${label}: a cancelled turn with inputs behind it pauses the queue`);
        }
        assert.equal(state.pending, 0, `${label}: nothing left pending`);

        // Both inputs ran, each in its own turn; every turn not cancelled answered its input.
        const { rows } = await infra.db.query(
          `SELECT i.id, i.status, i.turn_id, t.status AS turn_status,
                  (SELECT string_agg(part ->> 'text', '') FROM items it, jsonb_array_elements(it.content) part
                    WHERE it.turn_id = i.turn_id AND it.role = 'assistant' AND it.status = 'completed') AS text
           FROM inputs i LEFT JOIN turns t ON t.id = i.turn_id WHERE i.id = ANY($1::uuid[]) ORDER BY i.received_seq`,
          [[first.input_id, second.input_id]],
        );
        assert.deepEqual(rows.map((r) => r.status), ['consumed', 'consumed'], `${label}: both inputs consumed`);
        assert.notEqual(rows[0].turn_id, rows[1].turn_id, `${label}: one turn per input`);
        for (const [index, row] of rows.entries()) {
          if (row.turn_id === cancelledTurn) continue;
          assert.equal(row.turn_status, 'completed', `${label}: turn of input ${index + 1}`);
          assert.equal(row.text, echoOf(texts[index]!), `${label}: answer of input ${index + 1}`);
        }
      };

      let counter = 0;
      await Promise.all(
        sessions.map(async (sessionId) => {
          for (;;) {
            const n = counter++;
            if (n >= ITERATIONS) return;
            await iteration(sessionId, n);
          }
        }),
      );
      t.diagnostic(`${ITERATIONS} iterations on ${LANES} sessions in ${Date.now() - started} ms: ${JSON.stringify(outcomes)}`);
      // A race is only tested where it went both ways: a cancel that won (its paused queue resumed
      // with continue) and one that lost (refused, the queue left running).
      assert.ok(outcomes.resumedWithContinue > 0, `some cancel won and paused the queue behind it: ${JSON.stringify(outcomes)}`);
      assert.ok(outcomes.conflict + outcomes.completedDespiteCancel > 0, `some cancel lost to the turn's end: ${JSON.stringify(outcomes)}`);
      await waitQuiescent(infra, sessions, 30_000);
      await assertInvariants(infra, sessions, (m) => t.diagnostic(m));
    } finally {
      await cluster.stop();
    }
  });

  it('g. 2 apis + 2 workers, 200 sessions × 4 concurrent follow-ups: each input consumed once, turns in received order, each answer Echo: <text>', { timeout: 240_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'g-two-apis-two-workers', { apis: 2, workers: 2 });
    try {
      const apis = cluster.allApis();
      const SESSIONS = 200;
      const INPUTS = 4;
      const CONCURRENCY = 50;
      let rr = 0;
      const nextApi = (): Api => apis[rr++ % apis.length]!;
      const t0 = Date.now();
      const sessionIds = await mapLimit(Array.from({ length: SESSIONS }, (_, i) => i), CONCURRENCY, async () => (await nextApi().createSession()).id as string);
      t.diagnostic(`${SESSIONS} sessions created in ${Date.now() - t0} ms`);

      // Submissions: 50 in flight across sessions, each session's inputs one after another (so
      // the order they were acknowledged in is the order they must run in), round-robin over apis.
      const sent = new Map<string, string>(); // input_id -> text
      const t1 = Date.now();
      await mapLimit(sessionIds, CONCURRENCY, async (sessionId, s) => {
        for (let k = 0; k < INPUTS; k++) {
          const text = `session ${s} input ${k + 1}`;
          const receipt = await nextApi().send(sessionId, text);
          sent.set(receipt.input_id as string, text);
        }
      });
      t.diagnostic(`${SESSIONS * INPUTS} inputs accepted in ${Date.now() - t1} ms`);

      await waitQuiescent(infra, sessionIds, 150_000);
      t.diagnostic(`all turns done ${Date.now() - t1} ms after the first submit`);

      const { rows } = await infra.db.query(
        `SELECT i.session_id, i.id, i.received_seq, i.status, i.turn_id, t.seq AS turn_seq, t.status AS turn_status,
                (SELECT count(*)::int FROM items it WHERE it.turn_id = i.turn_id AND it.role = 'assistant' AND it.status = 'completed') AS answers,
                (SELECT string_agg(part ->> 'text', '') FROM items it, jsonb_array_elements(it.content) part
                  WHERE it.turn_id = i.turn_id AND it.role = 'assistant' AND it.status = 'completed') AS text
         FROM inputs i LEFT JOIN turns t ON t.id = i.turn_id
         WHERE i.session_id = ANY($1::uuid[]) ORDER BY i.session_id, i.received_seq`,
        [sessionIds],
      );
      assert.equal(rows.length, SESSIONS * INPUTS, 'every accepted input exists once');
      const bySession = new Map<string, any[]>();
      for (const row of rows) bySession.set(row.session_id, [...(bySession.get(row.session_id) ?? []), row]);
      const problems: string[] = [];
      for (const [sessionId, inputs] of bySession) {
        if (inputs.length !== INPUTS) problems.push(`${sessionId}: ${inputs.length} inputs`);
        const seqs = inputs.map((i) => Number(i.turn_seq));
        if (seqs.join() !== [...seqs].sort((a, b) => a - b).join() || new Set(seqs).size !== seqs.length) problems.push(`${sessionId}: turn order ${seqs.join(',')}`);
        for (const input of inputs) {
          if (input.status !== 'consumed') problems.push(`${input.id}: ${input.status}`);
          else if (input.turn_status !== 'completed') problems.push(`${input.id}: turn ${input.turn_status}`);
          else if (input.answers !== 1) problems.push(`${input.id}: ${input.answers} completed answers`);
          else if (input.text !== echoOf(sent.get(input.id) ?? '?')) problems.push(`${input.id}: answered "${input.text}" to "${sent.get(input.id)}"`);
        }
      }
      const { rows: turnCounts } = await infra.db.query(
        `SELECT count(*)::int AS n FROM turns WHERE session_id = ANY($1::uuid[])`,
        [sessionIds],
      );
      if (turnCounts[0].n !== SESSIONS * INPUTS) problems.push(`${turnCounts[0].n} turns for ${SESSIONS * INPUTS} inputs`);
      assert.deepEqual(problems.slice(0, 20), [], `${problems.length} problem(s)`);

      // The public read agrees with the durable rows, through both apis.
      for (const [index, sessionId] of sessionIds.slice(0, 4).entries()) {
        const turns = await apis[index % apis.length]!.turns(sessionId);
        assert.deepEqual(turns.map((turn) => turn.status), ['completed', 'completed', 'completed', 'completed']);
        const detail = await apis[(index + 1) % apis.length]!.turn(sessionId, turns[INPUTS - 1].id);
        assert.equal(detail.body.yuxi.output[0].content[0].text, echoOf(`session ${index} input ${INPUTS}`));
      }
      await assertInvariants(infra, sessionIds, (m) => t.diagnostic(m));
    } finally {
      await cluster.stop();
    }
  });
});
