// Steps and durable-state reads shared by the fault scenarios.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { durableDelivery } from '../support/durable-delivery.js';
import type { EverythingServer } from '../support/everything-server.js';
import type { FakeOpenAi } from '../support/fake-openai.js';
import { type Api, API, type EventTap, newKey } from './client.js';
import { assertInvariants, type Cluster, type FaultInfra, type Proc, waitQuiescent, waitUntil } from './harness.js';

export interface RunRow {
  id: string;
  seq: number;
  status: string;
  lease_owner: string | null;
  resume_from_run_id: string | null;
  input_ids: string[];
}

/** The runs of a turn in order. */
export async function runsOfTurn(infra: FaultInfra, turnId: string): Promise<RunRow[]> {
  const { rows } = await infra.db.query(
    `SELECT id, seq, status, lease_owner, resume_from_run_id, input_ids::text[] AS input_ids FROM runs WHERE turn_id = $1 ORDER BY seq`,
    [turnId],
  );
  return rows as RunRow[];
}

/**
 * The turn's model-call steps and the recorded requests (MODEL_REQUEST_AUDIT=on) side by side, in
 * step order: each request names its step and run.
 */
export async function modelRequestsOfTurn(infra: FaultInfra, turnId: string): Promise<{ steps: { id: string; run_id: string }[]; requests: { step_id: string; run_id: string }[] }> {
  const steps = await infra.db.query(`SELECT id, run_id FROM run_steps WHERE turn_id = $1 AND kind = 'model_call' ORDER BY seq`, [turnId]);
  const requests = await infra.db.query(
    `SELECT m.step_id, m.run_id FROM model_requests m JOIN runs r ON r.id = m.run_id WHERE r.turn_id = $1 ORDER BY m.seq`,
    [turnId],
  );
  return { steps: steps.rows as { id: string; run_id: string }[], requests: requests.rows as { step_id: string; run_id: string }[] };
}

export interface InputRow {
  id: string;
  received_seq: string;
  status: string;
  turn_id: string | null;
  turn_seq: number | null;
  turn_status: string | null;
}

/** A session's inputs in received order, with the turn each one ran in. */
export async function inputsInOrder(infra: FaultInfra, sessionId: string): Promise<InputRow[]> {
  const { rows } = await infra.db.query(
    `SELECT i.id, i.received_seq, i.status, i.turn_id, t.seq AS turn_seq, t.status AS turn_status
     FROM inputs i LEFT JOIN turns t ON t.id = i.turn_id
     WHERE i.session_id = $1 ORDER BY i.received_seq`,
    [sessionId],
  );
  return rows as InputRow[];
}

export interface ItemRow {
  id: string;
  turn_id: string;
  run_id: string | null;
  seq: string;
  role: string | null;
  status: string;
  phase: string | null;
  text: string | null;
}

/** The assistant items of a turn in order, with their text. */
export async function assistantItems(infra: FaultInfra, turnId: string): Promise<ItemRow[]> {
  const { rows } = await infra.db.query(
    `SELECT id, turn_id, run_id, seq, role, status, phase,
            (SELECT string_agg(part ->> 'text', '') FROM jsonb_array_elements(CASE WHEN jsonb_typeof(content) = 'array' THEN content ELSE '[]'::jsonb END) part) AS text
     FROM items WHERE turn_id = $1 AND role = 'assistant' ORDER BY seq`,
    [turnId],
  );
  return rows as ItemRow[];
}

/**
 * Every input of the session consumed, each in a turn of its own in received order, every turn
 * completed with exactly one completed (final) assistant item whose text is `expected[i]`.
 */
export async function assertTurnsInOrder(infra: FaultInfra, sessionId: string, expected: string[]): Promise<void> {
  const inputs = await inputsInOrder(infra, sessionId);
  assert.equal(inputs.length, expected.length, `the session has ${expected.length} inputs`);
  for (const input of inputs) assert.equal(input.status, 'consumed', `input ${input.id} consumed`);
  const turnSeqs = inputs.map((i) => Number(i.turn_seq));
  assert.equal(new Set(inputs.map((i) => i.turn_id)).size, inputs.length, 'one turn per input');
  assert.deepEqual(turnSeqs, [...turnSeqs].sort((a, b) => a - b), 'turns follow the received order');
  const { rows: turnCount } = await infra.db.query(`SELECT count(*)::int AS n FROM turns WHERE session_id = $1`, [sessionId]);
  assert.equal(turnCount[0].n, inputs.length, 'as many turns as inputs');
  for (const [index, input] of inputs.entries()) {
    assert.equal(input.turn_status, 'completed', `turn of input #${index + 1} completed`);
    const items = await assistantItems(infra, input.turn_id!);
    const completed = items.filter((i) => i.status === 'completed');
    assert.equal(completed.length, 1, `turn of input #${index + 1} has exactly one completed assistant item: ${JSON.stringify(items)}`);
    assert.equal(completed[0]!.text, expected[index], `turn of input #${index + 1} answered its own input`);
  }
}

/** Waits until the run is in progress under a lease; returns the lease owner. */
export async function leaseOwnerOf(infra: FaultInfra, runId: string, timeoutMs = 10_000): Promise<string> {
  return waitUntil(
    `run ${runId} to be leased`,
    async () => {
      const { rows } = await infra.db.query(`SELECT lease_owner FROM runs WHERE id = $1 AND status = 'in_progress' AND lease_owner IS NOT NULL`, [runId]);
      return rows[0]?.lease_owner as string | undefined;
    },
    { timeoutMs },
  );
}

export interface BusyTurn {
  session: any;
  tap: EventTap;
  text: string;
  followUps: string[];
  turnId: string;
  runId: string;
  leaseOwner: string;
  holder: Proc;
}

/**
 * A session whose first turn streams `text` slowly (the caller puts a [[delay:MS]] in it), with
 * `followUps` queued behind it; returns once a delta arrived and the worker holding the run is known.
 */
export async function startBusyTurn(
  infra: FaultInfra,
  cluster: Cluster,
  api: Api,
  tapFactory: (sessionId: string) => Promise<EventTap>,
  text: string,
  followUps: string[],
): Promise<BusyTurn> {
  const session = await api.createSession();
  const tap = await tapFactory(session.id);
  try {
    await api.send(session.id, text);
    for (const followUp of followUps) await api.send(session.id, followUp);
    const delta = await tap.waitFor((e) => e.type === 'agent.session.turn.output_text.delta', 20_000, 'first output_text.delta');
    const turnId = delta.data.turn_id as string;
    const runId = delta.data.yuxi?.run_id as string;
    assert.ok(turnId && runId, 'the delta names its turn and run');
    const leaseOwner = await leaseOwnerOf(infra, runId);
    const holder = await cluster.workerByLeaseOwner(leaseOwner);
    assert.ok(holder, `a worker of this cluster holds the run (lease_owner ${leaseOwner})`);
    return { session, tap, text, followUps, turnId, runId, leaseOwner, holder };
  } catch (error) {
    tap.close();
    throw error;
  }
}

/** The end of every scenario: the session goes quiet, its turns answered `expected` in order, and every invariant holds. */
export async function assertSessionSettled(
  infra: FaultInfra,
  sessionId: string,
  expected: string[],
  t: { diagnostic: (message: string) => void },
  timeoutMs = 30_000,
): Promise<void> {
  await waitQuiescent(infra, [sessionId], timeoutMs);
  await assertTurnsInOrder(infra, sessionId, expected);
  await assertInvariants(infra, [sessionId], (m) => t.diagnostic(m));
}

/**
 * Once the session's last durable event reached `tap`, every durable event of the outbox reached
 * it exactly once and in order, except for the events a `yuxi.session.resync` covers: a resync
 * excuses only the gap right after it (between the durable event before it and the next one it
 * announces), never a loss elsewhere, and no event may come twice.
 */
export async function assertEveryDurableEventOrResync(
  infra: FaultInfra,
  sessionId: string,
  name: string,
  tap: EventTap,
  t: { diagnostic: (message: string) => void },
): Promise<void> {
  const { rows: outbox } = await infra.db.query(`SELECT seq, event_id, type FROM session_events WHERE session_id = $1 ORDER BY seq`, [sessionId]);
  assert.ok(outbox.length > 0, 'the session has outbox rows');
  const last = outbox[outbox.length - 1];
  await tap.waitFor((e) => e.data?.event_id === last.event_id, 20_000, `${name}: the last durable event ${last.type} #${last.seq}`);
  const verdict = durableDelivery(
    outbox.map((row: { seq: string; event_id: string }) => ({ seq: Number(row.seq), eventId: row.event_id })),
    tap.events,
  );
  const resyncs = tap.ofType('yuxi.session.resync');
  t.diagnostic(
    `${name}: ${tap.connections} connection(s), attempts [${tap.attempts.map((a) => a.status ?? 'error').join(', ')}], ` +
      `${tap.events.length} events, ${verdict.missing}/${outbox.length} durable missing, ${resyncs.length} resync, ` +
      `gaps covered [${verdict.covered.join(', ')}], uncovered [${verdict.uncovered.join(', ')}], duplicates [${verdict.duplicates.join(', ')}], out of order [${verdict.outOfOrder.join(', ')}]`,
  );
  assert.deepEqual(verdict.uncovered, [], `${name}: durable events missed without a resync before the next one`);
  assert.deepEqual(verdict.duplicates, [], `${name}: durable events delivered twice`);
  assert.deepEqual(verdict.outOfOrder, [], `${name}: durable events delivered after a later one`);
}

/**
 * A turn waiting at an MCP elicitation: an agent whose one tool is the everything server's
 * `trigger-elicitation-request`, the model (`model`, on the fake) calling it and then answering
 * `reply`, and a session asking it. The call was sent once and is held open by the worker that ran it.
 */
export async function turnAtElicitation(
  api: Api,
  servers: { everything: EverythingServer; fake: FakeOpenAi },
  model: string,
  reply: string,
): Promise<{ sessionId: string; turnId: string; waitpointId: string; toolCalls: number }> {
  const agentId = `fault-${randomUUID().slice(0, 8)}`;
  const tool = { type: 'mcp', server_label: 'everything', server_url: servers.everything.url, allowed_tools: ['trigger-elicitation-request'] };
  const put = await api.request(`/api/v1/admin/agents/${agentId}`, { method: 'PUT', body: { name: agentId, model: `openai:${model}`, tools: [tool] } });
  assert.equal(put.status, 201, `PUT agent: ${put.text}`);
  servers.fake.script(model, [{ tool_calls: [{ id: 'call_elicit', name: 'trigger-elicitation-request', arguments: '{}' }] }, { text: reply }]);
  const calls = servers.everything.count('tools/call');
  const created = await api.request(`${API}/sessions`, { body: { agent_id: agentId, input: 'ask me' }, idempotencyKey: newKey('create') });
  assert.equal(created.status, 201, created.text);
  const sessionId = created.body.id as string;
  const turnId = await waitUntil('the session’s first turn', async () => (await api.turns(sessionId))[0]?.id as string | undefined);
  const waiting = await waitUntil(
    'the turn to wait at the elicitation',
    async () => {
      const res = await api.turn(sessionId, turnId);
      return res.body.status === 'requires_action' && res.body.yuxi.waitpoint?.elicitation ? res.body.yuxi.waitpoint : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  assert.equal(servers.everything.count('tools/call'), calls + 1, 'the call was sent once');
  return { sessionId, turnId, waitpointId: waiting.id as string, toolCalls: calls + 1 };
}
