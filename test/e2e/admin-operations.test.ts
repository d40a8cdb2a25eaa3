import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { API, newKey } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, createSessionAs, newProductUser, openStreamAs, postEventAs, sendMessageAs } from '../support/identity.js';
import type { SseStream } from '../support/sse.js';

// The read side of the operator API against the real stack: an administrator reads the
// timeline of another user's session, finds that user's open question in the inbox, reads the
// queues, and cancels sessions by filter. Until roles exist these routes are for administrators.
describe('operator API: timeline, inbox, queues, bulk cancel', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  async function watch(caller: Caller, sessionId: string): Promise<SseStream> {
    const stream = await openStreamAs(caller, sessionId);
    assert.equal(stream.status, 200, stream.bodyText);
    streams.push(stream);
    return stream;
  }

  /** Every open waitpoint of the inbox (as the bootstrap administrator) that `match` accepts, following cursors (bounded). */
  async function inboxWhere(query: string, match: (w: any) => boolean): Promise<any[]> {
    const found: any[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 50; page += 1) {
      const res: any = await call(bootstrap, `${ADMIN}/waitpoints?${query}&limit=100${cursor ? `&after=${cursor}` : ''}`);
      assert.equal(res.status, 200, res.text);
      found.push(...res.body.data.filter(match));
      if (!res.body.has_more) return found;
      cursor = res.body.last_id;
    }
    throw new Error('more than 50 pages of open waitpoints');
  }

  /** A new session of `caller` whose first turn waits at a question. */
  async function askingSession(caller: Caller, question: string): Promise<{ session: any; stream: SseStream; waiting: any }> {
    const session = await createSessionAs(caller, `[[ask:${question}]]`);
    const stream = await watch(caller, session.id);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    return { session, stream, waiting: waiting.data };
  }

  it('shows another user\'s session as turns, runs and steps: a tool call, an answered question, pages of turns', async () => {
    const { userId, caller: alice } = await newProductUser('alice');
    const session = await createSessionAs(alice, '[[tool:calculator {"expression":"2+3*4"}]]');
    const stream = await watch(alice, session.id);
    const first = await stream.waitForType('agent.session.turn.completed');

    // The second turn asks; the inbox shows the question with its owner until it is answered.
    await sendMessageAs(alice, session.id, '[[ask:Your name?]]');
    const waiting = (await stream.waitForType('yuxi.session.turn.waiting')).data;
    const open = await inboxWhere('status=open', (w) => w.session_id === session.id);
    assert.equal(open.length, 1, 'the open question is in the inbox once');
    assert.deepEqual(
      { id: open[0].id, object: open[0].object, kind: open[0].kind, status: open[0].status, owner_id: open[0].owner_id, turn_id: open[0].turn_id, agent_id: open[0].agent_id },
      { id: waiting.waitpoint.id, object: 'admin.waitpoint', kind: 'question', status: 'open', owner_id: userId, turn_id: waiting.turn_id, agent_id: 'default-chatbot' },
    );
    assert.equal(open[0].questions[0].question, 'Your name?');
    assert.equal(typeof open[0].created_at, 'number');
    assert.deepEqual(await inboxWhere('kind=approval', (w) => w.session_id === session.id), [], 'filtered by kind');
    assert.deepEqual(await inboxWhere('kind=cooperation', (w) => w.session_id === session.id), [], 'cooperation waits only when asked, and this is none');

    const question = waiting.waitpoint.questions[0];
    const answered = await postEventAs(alice, session.id, {
      type: 'yuxi.session.input.resume',
      turn_id: waiting.turn_id,
      waitpoint_id: waiting.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: question.question_id, answer: 'Ada' }] },
    });
    assert.equal(answered.status, 202, answered.text);
    await stream.waitForType('agent.session.turn.completed', waiting.turn_id);
    assert.deepEqual(await inboxWhere('status=open', (w) => w.session_id === session.id), [], 'an answered question leaves the inbox');

    // Newest turn first, one per page.
    const page1 = await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline?limit=1`);
    assert.equal(page1.status, 200, page1.text);
    assert.equal(page1.body.object, 'list');
    assert.equal(page1.body.has_more, true);
    // The suite's stack records model requests (MODEL_REQUEST_AUDIT=on); who reads them: test/e2e/model-requests.test.ts.
    assert.equal(page1.body.model_requests, 'recorded');
    assert.deepEqual(
      { id: page1.body.session.id, owner_id: page1.body.session.owner_id, status: page1.body.session.status, root: page1.body.session.root_session_id },
      { id: session.id, owner_id: userId, status: 'completed', root: session.id },
    );
    assert.deepEqual(page1.body.members, []);
    const [asked] = page1.body.data;
    assert.equal(asked.id, waiting.turn_id);
    assert.equal(asked.status, 'completed');
    assert.equal(asked.waitpoint, null, 'resolved: no open waitpoint');
    assert.deepEqual(asked.runs.map((r: any) => r.status), ['requires_action', 'completed'], 'the run that asked, then the one the answer resumed');
    assert.equal(asked.runs[1].resume_from_run_id, asked.runs[0].id);
    assert.equal(asked.runs[0].interrupted, false);
    assert.equal(asked.runs[1].lease, null, 'an ended run holds no lease');
    const resolution = asked.runs.flatMap((r: any) => r.steps).find((s: any) => s.kind === 'waitpoint');
    assert.ok(resolution, JSON.stringify(asked.runs));
    assert.equal(resolution.waitpoint.waitpoint_id, waiting.waitpoint.id);
    assert.deepEqual(resolution.waitpoint.response, { type: 'answer', answers: [{ question_id: question.question_id, answer: 'Ada' }] });

    const page2 = await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline?limit=1&after=${page1.body.last_id}`);
    assert.equal(page2.status, 200, page2.text);
    assert.equal(page2.body.has_more, false);
    const [calculated] = page2.body.data;
    assert.equal(calculated.id, first.data.turn_id);
    const steps = calculated.runs.flatMap((r: any) => r.steps);
    assert.deepEqual(steps.map((s: any) => s.kind), ['model_call', 'tool_call', 'model_call']);
    assert.deepEqual(steps.map((s: any) => s.seq), [1, 2, 3]);
    const [asks, tool, answers] = steps;
    assert.equal(asks.model_call.tool_call_count, 1);
    assert.ok(typeof asks.model_call.model === 'string' && asks.model_call.model.length > 0, JSON.stringify(asks));
    assert.equal(asks.model_call.finish_reason, 'tool_calls', 'the provider stopped to call a tool');
    assert.equal(answers.model_call.tool_call_count, 0);
    assert.equal(answers.model_call.finish_reason, 'stop');
    assert.match(answers.model_call.text, /14/);
    assert.deepEqual(
      { name: tool.tool_call.name, arguments: JSON.parse(tool.tool_call.arguments), success: tool.tool_call.success, approval: tool.tool_call.approval, status: tool.status },
      { name: 'calculator', arguments: { expression: '2+3*4' }, success: true, approval: null, status: 'completed' },
    );
    assert.match(tool.tool_call.output, /14/);
    // Durations are whatever they were; that they are known is what is asserted.
    assert.ok(Number.isInteger(tool.duration_ms) && tool.duration_ms >= 0, JSON.stringify(tool));
    assert.ok(Number.isInteger(tool.completed_at) && tool.completed_at >= tool.created_at);
    assert.ok(Number.isInteger(asks.duration_ms) && asks.duration_ms >= 0, JSON.stringify(asks));
    assert.equal(tool.truncated, false);

    // In ascending order the oldest turn comes first.
    const asc = await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline?order=asc`);
    assert.deepEqual(asc.body.data.map((t: any) => t.id), [first.data.turn_id, waiting.turn_id]);

    // Unknown, malformed, foreign cursor and deleted are refused as any other list.
    assert.equal((await call(bootstrap, `${ADMIN}/sessions/${randomUUID()}/timeline`)).status, 404);
    assert.equal((await call(bootstrap, `${ADMIN}/sessions/not-a-uuid/timeline`)).status, 404);
    const cursor = await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline?after=${randomUUID()}`);
    assert.equal(cursor.status, 400, cursor.text);
    assert.equal(cursor.body.error.code, 'invalid_cursor');
    assert.equal((await call(alice, `${API}/sessions/${session.id}`, { method: 'DELETE' })).status, 200);
    assert.equal((await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline`)).status, 404, 'a deleted session has no timeline');
  });

  it('reads queue and worker status', async () => {
    const res = await call(bootstrap, `${ADMIN}/queues`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.object, 'admin.queue_status');
    assert.deepEqual(res.body.queues.map((q: any) => q.name).sort(), ['automations', 'files', 'maintenance', 'session-dispatch', 'webhooks']);
    for (const queue of res.body.queues) {
      for (const count of ['waiting', 'active', 'delayed', 'failed']) assert.ok(Number.isInteger(queue[count]) && queue[count] >= 0, `${queue.name}.${count}: ${res.text}`);
      assert.equal(typeof queue.paused, 'boolean');
    }
    assert.ok(res.body.workers.length >= 1, `the stack's worker is alive: ${res.text}`);
    for (const worker of res.body.workers) {
      assert.equal(typeof worker.id, 'string');
      assert.ok(worker.last_heartbeat_at >= worker.started_at, res.text);
    }
    for (const count of ['held', 'awaiting_takeover', 'takeovers_last_hour']) assert.ok(Number.isInteger(res.body.runs[count]) && res.body.runs[count] >= 0, res.text);
    const age = res.body.oldest_pending_input_age_s;
    assert.ok(age === null || (Number.isInteger(age) && age >= 0), res.text);
    assert.ok(Number.isInteger(res.body.read_at));
  });

  it('bulk cancel: a dry run counts, the real run cancels each matching session once, a replay answers the same', async () => {
    const { userId, caller: bob } = await newProductUser('bob');
    const one = await askingSession(bob, 'First?');
    const two = await askingSession(bob, 'Second?');
    const filter = { owner_id: userId, status: 'requires_action' };

    const dry = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter, dry_run: true } });
    assert.equal(dry.status, 200, dry.text);
    assert.deepEqual(
      { object: dry.body.object, dry_run: dry.body.dry_run, matched: dry.body.matched, ids: dry.body.session_ids, limit: dry.body.limit, has_more: dry.body.has_more },
      { object: 'admin.bulk_cancel', dry_run: true, matched: 2, ids: [one.session.id, two.session.id], limit: 1000, has_more: false },
    );
    const other = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter: { ...filter, status: 'in_progress' }, dry_run: true } });
    assert.equal(other.body.matched, 0, 'no turn of bob\'s runs');
    assert.equal((await call(bob, `${API}/sessions/${one.session.id}/turns/${one.waiting.turn_id}`)).body.status, 'requires_action', 'a dry run changes nothing');

    const keyless = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter, dry_run: false } });
    assert.equal(keyless.status, 422, keyless.text);
    assert.equal(keyless.body.error.code, 'idempotency_key_required');

    const key = newKey('bulk');
    const real = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter, dry_run: false }, idempotencyKey: key });
    assert.equal(real.status, 200, real.text);
    assert.deepEqual(
      { dry_run: real.body.dry_run, matched: real.body.matched, ids: real.body.session_ids, skipped: real.body.skipped, has_more: real.body.has_more },
      { dry_run: false, matched: 2, ids: [one.session.id, two.session.id], skipped: [], has_more: false },
    );
    for (const { session, stream, waiting } of [one, two]) {
      // A turn waiting at a waitpoint has no worker to stop: it ends cancelled in the same transaction.
      await stream.waitForType('agent.session.turn.cancelled', waiting.turn_id);
      assert.equal((await call(bob, `${API}/sessions/${session.id}/turns/${waiting.turn_id}`)).body.status, 'cancelled');
    }

    const replay = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter, dry_run: false }, idempotencyKey: key });
    assert.equal(replay.status, 200);
    assert.equal(replay.text, real.text, 'a replay answers the first response byte for byte');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    const conflict = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter: { owner_id: userId }, dry_run: false }, idempotencyKey: key });
    assert.equal(conflict.status, 409, conflict.text);
    assert.equal(conflict.body.error.code, 'idempotency_conflict');
    const again = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter, dry_run: false }, idempotencyKey: newKey('bulk') });
    assert.deepEqual({ matched: again.body.matched, ids: again.body.session_ids }, { matched: 0, ids: [] }, 'nothing is left to cancel');

    // Each cancel is audited, naming the session, its turn and the call's key.
    const entries: any[] = [];
    let cursor: string | null = null;
    // Newest first: the entries are near the top, whatever other suites audit meanwhile (bounded).
    for (let page = 0; page < 20 && entries.length < 2; page += 1) {
      const audit: any = await call(bootstrap, `${ADMIN}/audit?limit=100${cursor ? `&after=${cursor}` : ''}`);
      assert.equal(audit.status, 200, audit.text);
      entries.push(...audit.body.data.filter((e: any) => e.action === 'session.cancel_requested' && e.details.idempotency_key === key));
      if (!audit.body.has_more) break;
      cursor = audit.body.last_id;
    }
    assert.deepEqual(entries.map((e: any) => e.target.id).sort(), [one.session.id, two.session.id].sort());
    for (const entry of entries) {
      assert.equal(entry.target.type, 'session');
      assert.equal(entry.details.owner_id, userId);
      assert.notEqual(entry.actor_id, null);
    }
  });

  it('refuses invalid queries and bodies', async () => {
    const kind = await call(bootstrap, `${ADMIN}/waitpoints?kind=phone_call`);
    assert.equal(kind.status, 422, kind.text);
    const status = await call(bootstrap, `${ADMIN}/waitpoints?status=closed`);
    assert.equal(status.status, 422, status.text);
    const cursor = await call(bootstrap, `${ADMIN}/waitpoints?after=nope`);
    assert.equal(cursor.status, 400, cursor.text);
    assert.equal(cursor.body.error.code, 'invalid_cursor');
    const noFilter = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { dry_run: true } });
    assert.equal(noFilter.status, 422, noFilter.text);
    const badOwner = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter: { owner_id: 'someone' }, dry_run: true } });
    assert.equal(badOwner.status, 422, badOwner.text);
    const unknownField = await call(bootstrap, `${ADMIN}/sessions/bulk-cancel`, { body: { filter: { project: 'x' }, dry_run: true } });
    assert.equal(unknownField.status, 422, unknownField.text);
  });

  it('is for administrators: a product user\'s full key, an agents key and no credentials are refused', async () => {
    const { caller: carol } = await newProductUser('carol');
    const session = await createSessionAs(carol, 'hello');
    const routes: [string, object | undefined][] = [
      [`${ADMIN}/sessions/${session.id}/timeline`, undefined],
      [`${ADMIN}/waitpoints?status=open`, undefined],
      [`${ADMIN}/queues`, undefined],
      [`${ADMIN}/sessions/bulk-cancel`, { filter: {}, dry_run: true }],
    ];
    for (const [path, body] of routes) {
      const own = await call(carol, path, { body, idempotencyKey: newKey('bulk') });
      assert.equal(own.status, 403, `${path}: ${own.text}`);
      assert.equal(own.body.error.code, 'forbidden');
      assert.equal((await call(null, path, { body })).status, 401, path);
    }
    // Refused before anything was selected, let alone cancelled.
    const bulk = await call(carol, `${ADMIN}/sessions/bulk-cancel`, { body: { filter: {}, dry_run: false }, idempotencyKey: newKey('bulk') });
    assert.equal(bulk.status, 403);
  });
});
