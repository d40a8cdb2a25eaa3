import assert from 'node:assert/strict';
import { query } from './db.js';
import { API, newKey } from './http.js';
import { call, type Caller, createSessionAs, openStreamAs, postEventAs, sendMessageAs } from './identity.js';

// The targets of the object-level authorization matrix (test/e2e/identity-bola.test.ts): one
// principal's session with something behind every id-taking route, the routes that take its ids,
// one attempt at a route as another caller, and what a mutation would have changed.

/** One principal's session with something behind every id-taking route: a completed turn with a run, a consumed and a cancelled input, a receipt. */
export interface Target {
  name: string;
  owner: Caller;
  sessionId: string;
  createKey: string;
  turnId: string;
  runId: string;
  consumedInputId: string;
  cancelledInputId: string;
  /** The Idempotency-Key of an event the owner really submitted (its receipt exists). */
  eventKey: string;
}

export async function seedTarget(name: string, owner: Caller): Promise<Target> {
  const createKey = newKey('create');
  const session = await createSessionAs(owner, 'hello there', createKey);
  const stream = await openStreamAs(owner, session.id);
  assert.equal(stream.status, 200, `${name}: the owner's stream opens`);
  try {
    const first = await stream.waitForType('agent.session.turn.completed');
    const eventKey = newKey('hold');
    const hold = await sendMessageAs(owner, session.id, 'hold a b c d e [[delay:100]]', eventKey);
    assert.equal(hold.status, 202, hold.text);
    const holding = await stream.waitFor((e) => e.type === 'agent.session.turn.created' && e.data.turn_id !== first.data.turn_id);
    const doomed = await sendMessageAs(owner, session.id, 'never runs');
    assert.equal(doomed.status, 202, doomed.text);
    const cancelled = await postEventAs(owner, session.id, { type: 'yuxi.session.input.cancel_input', input_id: doomed.body.input_id });
    assert.equal(cancelled.status, 202, cancelled.text);
    await stream.waitForType('agent.session.turn.completed', holding.data.turn_id);
    return {
      name,
      owner,
      sessionId: session.id,
      createKey,
      turnId: first.data.turn_id,
      runId: first.data.turn.yuxi.result_run_id,
      consumedInputId: session.yuxi.receipt.input_id,
      cancelledInputId: doomed.body.input_id,
      eventKey,
    };
  } finally {
    stream.close();
  }
}

export interface Route {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: unknown;
  idempotencyKey?: string;
  /** The session whose event stream this route opens. */
  sse?: string;
}

/** Every route that takes an id of the target's, generated from the target itself. */
export function routesOf(t: Target): Route[] {
  const s = `${API}/sessions/${t.sessionId}`;
  const event = (e: object, idempotencyKey = newKey('bola')): Pick<Route, 'body' | 'idempotencyKey'> => ({ body: { events: [e] }, idempotencyKey });
  return [
    { name: 'GET session', method: 'GET', path: s },
    { name: 'POST session (update)', method: 'POST', path: s, body: { yuxi: { title: 'taken over', is_pinned: true } } },
    { name: 'POST archive', method: 'POST', path: `${s}/archive` },
    { name: 'POST events: message', method: 'POST', path: `${s}/events`, ...event({ type: 'agent.session.input.message', input: 'intrude' }) },
    { name: "POST events: message under the owner's own Idempotency-Key", method: 'POST', path: `${s}/events`, ...event({ type: 'agent.session.input.message', input: 'hold a b c d e [[delay:100]]', yuxi: { mode: 'follow_up' } }, t.eventKey) },
    { name: 'POST events: cancel', method: 'POST', path: `${s}/events`, ...event({ type: 'agent.session.input.cancel' }) },
    { name: 'POST events: cancel_input', method: 'POST', path: `${s}/events`, ...event({ type: 'yuxi.session.input.cancel_input', input_id: t.cancelledInputId }) },
    { name: 'POST events: continue', method: 'POST', path: `${s}/events`, ...event({ type: 'yuxi.session.input.continue' }) },
    { name: 'GET events (SSE)', method: 'GET', path: `${s}/events`, sse: t.sessionId },
    { name: 'GET queue', method: 'GET', path: `${s}/queue` },
    { name: 'GET inputs/{consumed}', method: 'GET', path: `${s}/inputs/${t.consumedInputId}` },
    { name: 'GET inputs/{cancelled}', method: 'GET', path: `${s}/inputs/${t.cancelledInputId}` },
    { name: 'GET receipt', method: 'GET', path: `${s}/receipt?idempotency_key=${encodeURIComponent(t.eventKey)}` },
    { name: 'GET turns', method: 'GET', path: `${s}/turns` },
    { name: 'GET turns/{turn}', method: 'GET', path: `${s}/turns/${t.turnId}` },
    { name: 'GET turns/{turn}/items', method: 'GET', path: `${s}/turns/${t.turnId}/items` },
    { name: 'GET items', method: 'GET', path: `${s}/items` },
    { name: 'GET runs/{run}', method: 'GET', path: `${s}/runs/${t.runId}` },
    { name: 'GET state', method: 'GET', path: `${s}/state` },
    { name: 'POST fork', method: 'POST', path: `${s}/fork`, body: { after_turn_id: t.turnId }, idempotencyKey: newKey('bola') },
  ];
}

/** Status, content type and error code of one route as `caller`; an SSE answer that is a stream is closed at once. */
export async function attempt(caller: Caller, route: Route): Promise<{ status: number; contentType: string; code: string | undefined; text: string }> {
  if (route.sse) {
    const stream = await openStreamAs(caller, route.sse);
    stream.close();
    let code: string | undefined;
    try {
      code = JSON.parse(stream.bodyText).error?.code;
    } catch {
      code = undefined;
    }
    return { status: stream.status, contentType: stream.contentType, code, text: stream.bodyText };
  }
  const res = await call(caller, route.path, { method: route.method, body: route.body, idempotencyKey: route.idempotencyKey });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', code: res.body?.error?.code, text: res.text };
}

/** What a mutation would have changed, read by the owner and straight from Postgres. */
export async function snapshot(t: Target) {
  const session = await call(t.owner, `${API}/sessions/${t.sessionId}`);
  const state = await call(t.owner, `${API}/sessions/${t.sessionId}/state`);
  const [counts] = await query<{ turns: number; inputs: number; receipts: number }>(
    `SELECT (SELECT count(*)::int FROM turns WHERE session_id = $1) AS turns,
            (SELECT count(*)::int FROM inputs WHERE session_id = $1) AS inputs,
            (SELECT count(*)::int FROM idempotency_receipts WHERE session_id = $1) AS receipts`,
    [t.sessionId],
  );
  return {
    title: session.body.yuxi.title,
    is_pinned: session.body.yuxi.is_pinned,
    archived: session.body.yuxi.archived,
    queued_input_count: session.body.yuxi.queued_input_count,
    state_queued_input_count: state.body.queued_input_count,
    queue_paused: session.body.yuxi.queue_paused,
    status: session.body.status,
    ...counts,
  };
}

/** Every route of an automation (and one of its invocations), for the matrix of automations. */
export function automationRoutesOf(automationId: string, invocationId: string): Route[] {
  const a = `${API}/automations/${automationId}`;
  return [
    { name: 'GET automation', method: 'GET', path: a },
    { name: 'GET invocations', method: 'GET', path: `${a}/invocations` },
    { name: 'GET invocations/{invocation}', method: 'GET', path: `${a}/invocations/${invocationId}` },
    { name: 'POST automation (update)', method: 'POST', path: a, body: { name: 'taken over', expression: '* * * * *' } },
    { name: 'POST pause', method: 'POST', path: `${a}/pause` },
    { name: 'POST resume', method: 'POST', path: `${a}/resume` },
    { name: 'POST invocations (run now)', method: 'POST', path: `${a}/invocations`, idempotencyKey: newKey('bola-run') },
    { name: 'DELETE automation', method: 'DELETE', path: a },
  ];
}
