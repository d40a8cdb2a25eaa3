import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type Caller, createKey, createSessionAs, newProductUser, openStreamAs, signToken } from '../support/identity.js';
import type { SseStream } from '../support/sse.js';

/** PUT …/users/{id}/role as `by` (default the bootstrap administrator). */
function setRole(userId: string, role: string | null, by: Caller = bootstrap, baseUrl?: string) {
  return call(by, `${ADMIN}/users/${userId}/role`, { method: 'PUT', body: { role }, baseUrl });
}

async function grant(userId: string, role: string | null): Promise<void> {
  const res = await setRole(userId, role);
  assert.equal(res.status, 200, res.text);
}

/** A control event through the admin route. */
function adminEvent(caller: Caller, sessionId: string, event: object, idempotencyKey = newKey('op')) {
  return call(caller, `${ADMIN}/sessions/${sessionId}/events`, { body: { events: [event] }, idempotencyKey });
}

async function searchIds(caller: Caller, query: string): Promise<string[]> {
  const res = await call(caller, `${ADMIN}/sessions?limit=100&${query}`);
  assert.equal(res.status, 200, `${query}: ${res.text}`);
  return res.body.data.map((s: any) => s.id as string);
}

/** Opens the owner's stream, waits for one event, closes it. */
async function waitOn<T>(owner: Caller, sessionId: string, wait: (stream: SseStream) => Promise<T>): Promise<T> {
  const stream = await openStreamAs(owner, sessionId);
  assert.equal(stream.status, 200);
  try {
    return await wait(stream);
  } finally {
    stream.close();
  }
}

describe('operators: roles, the BOLA matrix of the operator API, search, and control events on any owner\'s session', () => {
  let alice: { userId: string; caller: Caller; key: { id: string } };
  let viewer: { userId: string; caller: Caller };
  let operator: { userId: string; caller: Caller; key: { id: string } };
  let plain: { userId: string; caller: Caller };
  let aliceSession: any;

  before(async () => {
    alice = await newProductUser('alice');
    viewer = await newProductUser('viewer');
    operator = await newProductUser('operator');
    plain = await newProductUser('product user');
    await grant(viewer.userId, 'viewer');
    await grant(operator.userId, 'operator');
    aliceSession = await createSessionAs(alice.caller, 'hello from alice');
    await waitOn(alice.caller, aliceSession.id, (s) => s.waitForType('agent.session.turn.completed'));
  });

  it('an administrator grants and removes a role; it applies on the next request on both api replicas; audited; shown in the users list', async () => {
    const user = await newProductUser('soon a viewer');
    // Both replicas have verified (and cached) the key before the grant.
    for (const baseUrl of [env.apiUrl, env.apiUrl2]) assert.equal((await call(user.caller, `${ADMIN}/sessions`, { baseUrl })).status, 403);

    const granted = await setRole(user.userId, 'viewer', bootstrap, env.apiUrl2);
    assert.equal(granted.status, 200, granted.text);
    assert.deepEqual({ id: granted.body.id, role: granted.body.role, is_admin: granted.body.is_admin, kind: granted.body.kind }, { id: user.userId, role: 'viewer', is_admin: false, kind: 'user' });
    for (const baseUrl of [env.apiUrl, env.apiUrl2]) assert.equal((await call(user.caller, `${ADMIN}/sessions`, { baseUrl })).status, 200, `the viewer reads on ${baseUrl}`);

    const listed = await call(bootstrap, `${ADMIN}/users?limit=100`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data.find((u: any) => u.id === user.userId)?.role, 'viewer');

    const removed = await setRole(user.userId, null);
    assert.equal(removed.status, 200, removed.text);
    assert.equal(removed.body.role, null);
    for (const baseUrl of [env.apiUrl, env.apiUrl2]) {
      const refused = await call(user.caller, `${ADMIN}/sessions`, { baseUrl });
      assert.equal(refused.status, 403, `the role is gone on ${baseUrl}`);
      assert.equal(refused.body.error.code, 'forbidden');
    }

    const audit = await call(bootstrap, `${ADMIN}/audit?limit=100`);
    const entries = audit.body.data.filter((e: any) => e.action === 'user.role_changed' && e.target.id === user.userId);
    assert.deepEqual(
      entries.map((e: any) => [e.target.type, e.details.role, e.details.previous_role]),
      [
        ['user', null, 'viewer'],
        ['user', 'viewer', null],
      ],
    );
  });

  it('GET /api/v1/me says who the credential is: the role, the key, an app\'s end user', async () => {
    const me = await call(viewer.caller, '/api/v1/me');
    assert.equal(me.status, 200, me.text);
    assert.deepEqual({ ...me.body, key_id: typeof me.body.key_id }, { object: 'caller', user_id: viewer.userId, actor_id: viewer.userId, kind: 'user', key_id: 'string', access: 'full', app_id: null, end_user_id: null, role: 'viewer' });
    assert.equal((await call(plain.caller, '/api/v1/me')).body.role, null);
    const app = await createKey({ user_id: alice.userId, app_id: `me-app-${randomUUID().slice(0, 8)}` });
    const endUser = await call(asEndUser({ name: 'app', token: app.secret }, 'eu-7'), '/api/v1/me');
    assert.equal(endUser.status, 200, endUser.text);
    assert.deepEqual([endUser.body.kind, endUser.body.actor_id, endUser.body.end_user_id, endUser.body.app_id, endUser.body.role], ['end_user', alice.userId, 'eu-7', app.body.app_id, null]);
    assert.notEqual(endUser.body.user_id, alice.userId, 'the end user owns the resources');
  });

  it('a user token\'s role applies on its next request too', async () => {
    const subject = `ops-${randomUUID()}`;
    const token: Caller = { name: 'token user', token: await signToken({ subject }) };
    assert.equal((await call(token, `${ADMIN}/sessions`)).status, 403);
    const users = await call(bootstrap, `${ADMIN}/users?limit=100`);
    const userId = users.body.data.find((u: any) => u.subject === subject)?.id;
    assert.ok(userId, 'the token user is listed');
    await grant(userId, 'operator');
    assert.equal((await call(token, `${ADMIN}/sessions/${aliceSession.id}`)).status, 200);
  });

  it('the role route: 404 for an unknown user, 422 for a bad role, an end user or the bootstrap user, 403 for everyone but administrators', async () => {
    assert.equal((await setRole(randomUUID(), 'viewer')).status, 404);
    assert.equal((await setRole('not-a-uuid', 'viewer')).status, 404);
    for (const body of [{ role: 'superuser' }, {}, { role: 'viewer', extra: 1 }]) {
      const res = await call(bootstrap, `${ADMIN}/users/${plain.userId}/role`, { method: 'PUT', body });
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.equal(res.body.error.code, 'validation_failed');
    }

    const app = await createKey({ user_id: alice.userId, app_id: `ops-app-${randomUUID().slice(0, 8)}` });
    const endUserSession = await createSessionAs(asEndUser({ name: 'app', token: app.secret }, 'eu-7'), undefined);
    const found = await call(bootstrap, `${ADMIN}/sessions/${endUserSession.id}`);
    assert.equal(found.body.yuxi.owner.kind, 'end_user');
    const endUser = await setRole(found.body.yuxi.owner_id, 'viewer');
    assert.equal(endUser.status, 422, endUser.text);

    const keys = await call(bootstrap, `${ADMIN}/api-keys`);
    const bootstrapUser = keys.body.data.find((k: any) => k.name === 'bootstrap')?.user_id;
    assert.ok(bootstrapUser);
    assert.equal((await setRole(bootstrapUser, 'viewer')).status, 422, 'the bootstrap user stays an administrator');
    assert.equal((await setRole(bootstrapUser, 'admin')).status, 200);

    for (const caller of [operator.caller, viewer.caller, plain.caller]) {
      const res = await setRole(plain.userId, 'admin', caller);
      assert.equal(res.status, 403, caller.name);
      assert.equal(res.body.error.code, 'forbidden');
    }
  });

  it('a product user without a role reaches no cross-owner or administrators\' route', async () => {
    const routes: [string, string, object?][] = [
      ['GET', `${ADMIN}/sessions`],
      ['GET', `${ADMIN}/sessions/${aliceSession.id}`],
      ['POST', `${ADMIN}/sessions/${aliceSession.id}/events`, { events: [{ type: 'yuxi.session.tree.stop' }] }],
      ['GET', `${ADMIN}/users`],
      ['PUT', `${ADMIN}/users/${plain.userId}/role`, { role: 'admin' }],
      ['GET', `${ADMIN}/audit`],
      ['GET', `${ADMIN}/sessions/${aliceSession.id}/timeline`],
      ['GET', `${ADMIN}/waitpoints?status=open`],
      ['GET', `${ADMIN}/queues`],
      ['POST', `${ADMIN}/sessions/bulk-cancel`, { filter: { owner_id: alice.userId }, dry_run: true }],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(plain.caller, path, { method, body, idempotencyKey: newKey('plain') });
      assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      assert.equal(res.body.error.code, 'forbidden');
    }
    // Alice's own session through the public routes: not found, as ever.
    assert.equal((await call(plain.caller, `${API}/sessions/${aliceSession.id}`)).status, 404);
  });

  it('a viewer reads every owner\'s sessions under /admin and acts on nothing', async () => {
    const listed = await searchIds(viewer.caller, `owner_id=${alice.userId}`);
    assert.deepEqual(listed, [aliceSession.id]);
    const one = await call(viewer.caller, `${ADMIN}/sessions/${aliceSession.id}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.yuxi.owner_id, alice.userId);
    assert.deepEqual(one.body.yuxi.owner, { kind: 'user', subject: null, app_id: null, name: null });
    assert.equal(one.body.status, 'completed');

    for (const event of [{ type: 'agent.session.input.cancel' }, { type: 'yuxi.session.tree.stop' }, { type: 'yuxi.session.input.continue' }]) {
      const res = await adminEvent(viewer.caller, aliceSession.id, event);
      assert.equal(res.status, 403, `${event.type}: ${res.text}`);
    }
    for (const path of [`${ADMIN}/sessions/${aliceSession.id}/timeline`, `${ADMIN}/waitpoints?status=open`, `${ADMIN}/queues`]) {
      assert.equal((await call(viewer.caller, path)).status, 200, `the viewer reads ${path}`);
    }
    for (const dry_run of [true, false]) {
      const bulk = await call(viewer.caller, `${ADMIN}/sessions/bulk-cancel`, { body: { filter: { owner_id: alice.userId }, dry_run }, idempotencyKey: newKey('bulk') });
      assert.equal(bulk.status, 403, `bulk cancel (dry run ${dry_run}): ${bulk.text}`);
    }
    // Outside /admin the viewer is a product user like any other.
    assert.equal((await call(viewer.caller, `${API}/sessions/${aliceSession.id}`)).status, 404);
    for (const path of [`${ADMIN}/users`, `${ADMIN}/audit`]) assert.equal((await call(viewer.caller, path)).status, 403, path);
  });

  it('an operator manages no keys, agents or roles', async () => {
    const otherKey = await call(operator.caller, `${ADMIN}/api-keys`, { body: { name: 'for alice', access: 'full', user_id: alice.userId } });
    assert.equal(otherKey.status, 403, otherKey.text);
    const keys = await call(operator.caller, `${ADMIN}/api-keys`);
    assert.deepEqual([...new Set(keys.body.data.map((k: any) => k.user_id))], [operator.userId], 'only its own keys');
    assert.equal((await call(operator.caller, `${ADMIN}/api-keys/${alice.key.id}`, { method: 'DELETE' })).status, 404);
    const agent = await call(operator.caller, `${ADMIN}/agents/ops-${randomUUID().slice(0, 8)}`, { method: 'PUT', body: { name: 'Public', model: 'scripted:echo', visibility: 'public' } });
    assert.equal(agent.status, 403, agent.text);
    for (const path of [`${ADMIN}/users`, `${ADMIN}/audit`]) assert.equal((await call(operator.caller, path)).status, 403, path);
    // The operator's own routes: the timeline, the inbox, the queues and a bulk cancel's count.
    for (const path of [`${ADMIN}/sessions/${aliceSession.id}/timeline`, `${ADMIN}/waitpoints?status=open`, `${ADMIN}/queues`]) {
      assert.equal((await call(operator.caller, path)).status, 200, path);
    }
    const dry = await call(operator.caller, `${ADMIN}/sessions/bulk-cancel`, { body: { filter: { owner_id: alice.userId }, dry_run: true } });
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.body.dry_run, true);
    // Another owner's session outside /admin: not found, as for anyone.
    assert.equal((await call(operator.caller, `${API}/sessions/${aliceSession.id}`)).status, 404);
    const viaPublic = await call(operator.caller, `${API}/sessions/${aliceSession.id}/events`, { body: { events: [{ type: 'yuxi.session.tree.stop' }] }, idempotencyKey: newKey('pub') });
    assert.equal(viaPublic.status, 404);
  });

  it('an operator answers another user\'s question through the admin route; the audit names the operator; messages are refused', async () => {
    const session = await createSessionAs(alice.caller, 'needs a person [[ask:Question?]]');
    const stream = await openStreamAs(alice.caller, session.id);
    assert.equal(stream.status, 200);
    let turnId: string | undefined;
    try {
      const waiting = await stream.waitForType('yuxi.session.turn.waiting');
      turnId = waiting.data.turn_id;
      const waitpoint = waiting.data.waitpoint;
      assert.equal(waitpoint.kind, 'question');
      assert.ok((await searchIds(operator.caller, `waiting=true&owner_id=${alice.userId}`)).includes(session.id), 'the inbox filter finds it');

      const message = await adminEvent(operator.caller, session.id, { type: 'agent.session.input.message', input: 'I speak for alice' });
      assert.equal(message.status, 422, message.text);
      assert.equal(message.body.error.code, 'control_event_required');
      const unknown = await adminEvent(operator.caller, session.id, { type: 'no.such.event' });
      assert.equal(unknown.body.error.code, 'unknown_event_type');
      const missingKey = await call(operator.caller, `${ADMIN}/sessions/${session.id}/events`, { body: { events: [{ type: 'agent.session.input.cancel' }] } });
      assert.equal(missingKey.body.error.code, 'idempotency_key_required');

      const answer = {
        type: 'yuxi.session.input.resume',
        turn_id: waiting.data.turn_id,
        waitpoint_id: waitpoint.id,
        response: { type: 'answer', answers: [{ question_id: waitpoint.questions[0].question_id, answer: 'yes' }] },
      };
      const key = newKey('op-answer');
      const accepted = await adminEvent(operator.caller, session.id, answer, key);
      assert.equal(accepted.status, 202, accepted.text);
      assert.equal(accepted.body.turn_id, waiting.data.turn_id);
      const replay = await adminEvent(operator.caller, session.id, answer, key);
      assert.equal(replay.status, 202);
      assert.equal(replay.text, accepted.text, 'a replay answers the first receipt');
      // The operator's key is its own: the owner's same key is a new request of the owner's.
      const ownerSameKey = await call(alice.caller, `${API}/sessions/${session.id}/events`, { body: { events: [answer] }, idempotencyKey: key });
      assert.equal(ownerSameKey.status, 409, ownerSameKey.text);
      await stream.waitForType('agent.session.turn.completed', waiting.data.turn_id);
    } finally {
      stream.close();
    }

    const audit = await call(bootstrap, `${ADMIN}/audit?limit=100`);
    const entries = audit.body.data.filter((e: any) => e.action === 'session.operator_event' && e.target.id === session.id);
    assert.equal(entries.length, 1, 'one entry: the replay and the refusals wrote none');
    assert.deepEqual(
      { actor_id: entries[0].actor_id, key_id: entries[0].key_id, target: entries[0].target, event_type: entries[0].details.event_type, owner_id: entries[0].details.owner_id, turn_id: entries[0].details.turn_id },
      { actor_id: operator.userId, key_id: operator.key.id, target: { type: 'session', id: session.id }, event_type: 'yuxi.session.input.resume', owner_id: alice.userId, turn_id: turnId },
    );
  });

  it('an operator stops and continues another user\'s session tree; an unknown or deleted session is 404', async () => {
    const session = await createSessionAs(alice.caller);
    assert.equal((await adminEvent(operator.caller, session.id, { type: 'yuxi.session.tree.stop' })).status, 202);
    assert.equal((await adminEvent(operator.caller, session.id, { type: 'yuxi.session.tree.continue' })).status, 202);
    assert.equal((await adminEvent(operator.caller, randomUUID(), { type: 'yuxi.session.tree.stop' })).status, 404);
    const deleted = await call(alice.caller, `${API}/sessions/${session.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await adminEvent(operator.caller, session.id, { type: 'yuxi.session.tree.stop' })).status, 404);
    assert.equal((await call(viewer.caller, `${ADMIN}/sessions/${session.id}`)).status, 404);
    assert.ok(!(await searchIds(viewer.caller, `owner_id=${alice.userId}`)).includes(session.id), 'deleted sessions are not listed');
  });

  it('search: owner, agent, status, waiting, error code, q, created range, app and end user, cursor pages', async () => {
    const carol = await newProductUser('carol');
    const title = `Alpha 100%_x ${randomUUID().slice(0, 8)}`;
    const completedRes = await call(carol.caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', title, input: 'hello' }, idempotencyKey: newKey('create') });
    assert.equal(completedRes.status, 201, completedRes.text);
    const completed = completedRes.body;
    const { id: agentId } = await putAgent({ model: 'scripted:echo' });
    const idle = await createSessionAs(carol.caller, undefined, newKey('create'), agentId);
    const waiting = await createSessionAs(carol.caller, 'wait [[ask:Proceed?]]');
    const failed = await createSessionAs(carol.caller, 'no luck [[fail:model_bad_request]]');
    await waitOn(carol.caller, completed.id, (s) => s.waitForType('agent.session.turn.completed'));
    await waitOn(carol.caller, waiting.id, (s) => s.waitForType('yuxi.session.turn.waiting'));
    await waitOn(carol.caller, failed.id, (s) => s.waitForType('agent.session.turn.failed'));
    const all = [failed.id, waiting.id, idle.id, completed.id];
    const owner = `owner_id=${carol.userId}`;

    assert.deepEqual(await searchIds(viewer.caller, owner), all, 'newest first');
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&order=asc`), [...all].reverse());
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&agent_id=${agentId}`), [idle.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&status=idle`), [idle.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&status=completed`), [completed.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&status=requires_action`), [waiting.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&status=failed`), [failed.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&status=in_progress`), []);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&waiting=true`), [waiting.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&waiting=false`), [failed.id, idle.id, completed.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&error_code=model_bad_request`), [failed.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&error_code=model_auth_failed`), []);
    // q: a title fragment, case-insensitive, its % and _ taken literally; or the start of an id.
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&q=${encodeURIComponent('alpha 100%_X')}`), [completed.id]);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&q=${encodeURIComponent('100%x')}`), []);
    assert.deepEqual(await searchIds(viewer.caller, `q=${encodeURIComponent(title)}`), [completed.id], 'across every owner');
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&q=${idle.id.slice(0, 13).toUpperCase()}`).then((ids) => ids.includes(idle.id)), true);
    assert.deepEqual(await searchIds(viewer.caller, `q=${idle.id}`), [idle.id]);

    const detail = await call(viewer.caller, `${ADMIN}/sessions?${owner}`);
    for (const row of detail.body.data) {
      assert.equal((await call(viewer.caller, `${ADMIN}/sessions?${owner}&status=${row.status}`)).body.data.some((s: any) => s.id === row.id), true, `${row.id} is found by its own status ${row.status}`);
    }
    const created = detail.body.data.map((s: any) => s.created_at as number);
    const [first, last] = [Math.min(...created), Math.max(...created)];
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&created_after=${first}&created_before=${last + 1}`), all);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&created_before=${first}`), []);
    assert.deepEqual(await searchIds(viewer.caller, `${owner}&created_after=${last + 1}`), []);

    const appId = `ops-app-${randomUUID().slice(0, 8)}`;
    const app = await createKey({ user_id: carol.userId, app_id: appId });
    const endUserSession = await createSessionAs(asEndUser({ name: 'carol app', token: app.secret }, 'eu-42'));
    assert.deepEqual(await searchIds(viewer.caller, `app_id=${appId}`), [endUserSession.id]);
    assert.deepEqual(await searchIds(viewer.caller, `app_id=${appId}&end_user_id=eu-42`), [endUserSession.id]);
    assert.deepEqual(await searchIds(viewer.caller, `app_id=${appId}&end_user_id=eu-43`), []);
    const row = (await call(viewer.caller, `${ADMIN}/sessions?app_id=${appId}`)).body.data[0];
    assert.deepEqual(row.yuxi.owner, { kind: 'end_user', subject: 'eu-42', app_id: appId, name: null });

    const pages: string[][] = [];
    let after: string | null = null;
    for (let i = 0; i < 3; i += 1) {
      const page: any = await call(viewer.caller, `${ADMIN}/sessions?${owner}&limit=3${after ? `&after=${after}` : ''}`);
      assert.equal(page.status, 200, page.text);
      pages.push(page.body.data.map((s: any) => s.id));
      if (!page.body.has_more) break;
      after = page.body.last_id;
    }
    assert.deepEqual(pages, [all.slice(0, 3), all.slice(3)]);
    const badCursor = await call(viewer.caller, `${ADMIN}/sessions?after=${randomUUID()}`);
    assert.equal(badCursor.status, 400);
    assert.equal(badCursor.body.error.code, 'invalid_cursor');
    for (const bad of ['status=sleeping', 'waiting=yes', 'owner_id=alice', 'created_after=-1', 'q=']) {
      assert.equal((await call(viewer.caller, `${ADMIN}/sessions?${bad}`)).status, 422, bad);
    }
  });
});
