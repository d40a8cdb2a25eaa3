import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, asEndUser, call, type Caller, createKey, createSessionAs, listSessionIds, newProductUser, openStreamAs, signToken } from '../support/identity.js';
import { attempt, automationRoutesOf, routesOf, seedTarget, snapshot, type Target } from '../support/bola-targets.js';

describe('identity: object-level authorization (BOLA) matrix', () => {
  const APP_1 = `app-one-${randomUUID().slice(0, 8)}`;
  const APP_2 = `app-two-${randomUUID().slice(0, 8)}`;
  let userA: string;
  /** Product user A (unbound full key). */
  let a: Caller;
  /** Another product user. */
  let b: Caller;
  /** A's key bound to app 1, acting as end user Y / X / the default end user. */
  let app1: Caller;
  let y: Caller;
  let x: Caller;
  let app1Default: Caller;
  /** A's key bound to app 2, acting as an end user with the same external id as Y. */
  let app2y: Caller;
  let targetA: Target;
  let targetY: Target;

  before(async () => {
    const productA = await newProductUser('product user A');
    userA = productA.userId;
    a = productA.caller;
    b = (await newProductUser('product user B')).caller;
    const endUserY = `end-user-y-${randomUUID()}`;
    const key1 = await createKey({ user_id: userA, app_id: APP_1 });
    const key2 = await createKey({ user_id: userA, app_id: APP_2 });
    app1 = { name: 'app 1 key', token: key1.secret };
    y = asEndUser(app1, endUserY, 'app 1 end user Y');
    x = asEndUser(app1, `end-user-x-${randomUUID()}`, 'app 1 end user X');
    app1Default = asEndUser(app1, undefined, 'app 1 default end user');
    app2y = asEndUser({ name: 'app 2 key', token: key2.secret }, endUserY, 'app 2 end user with Y’s id');
    [targetA, targetY] = await Promise.all([seedTarget("A's product session", a), seedTarget("end user Y's session", y)]);
  });

  it('answers 404 not_found on every id-taking route for every foreign principal, changes nothing, and lists only own sessions', async () => {
    // Each principal also owns a session of its own, so that its list is not trivially empty.
    const principals = [a, b, y, x, app1Default, app2y];
    const own = new Map<Caller, string[]>();
    for (const caller of principals) own.set(caller, [(await createSessionAs(caller)).id]);
    own.get(a)!.push(targetA.sessionId);
    own.get(y)!.push(targetY.sessionId);

    // The routes are real: the owner reads every one of them (a typo would 404 for everyone).
    for (const t of [targetA, targetY]) {
      for (const route of routesOf(t).filter((r) => r.method === 'GET')) {
        const res = await attempt(t.owner, route);
        assert.equal(res.status, 200, `${t.name}: the owner can ${route.name}: ${res.text}`);
      }
    }

    const before = { a: await snapshot(targetA), y: await snapshot(targetY) };
    const cells: [Caller, Target][] = [
      [b, targetA], // (a) another product user
      [b, targetY],
      [x, targetY], // (b) the same app key, another end user
      [app2y, targetY], // (c) another app of the same product user, even with the same end-user id
      [app1Default, targetY], // (d) the app's default end user
      [a, targetY], // (e) the product user behind the app, on its end user's session…
      [y, targetA], // …and the end user on the product user's session
      [x, targetA],
      [app1Default, targetA],
    ];
    const failures: string[] = [];
    let checked = 0;
    for (const [caller, target] of cells) {
      for (const route of routesOf(target)) {
        const res = await attempt(caller, route);
        checked += 1;
        const ok = res.status === 404 && res.code === 'not_found' && res.contentType.startsWith('application/json');
        if (!ok) failures.push(`${caller.name} → ${target.name}: ${route.name} answered ${res.status} ${res.contentType} ${res.text.slice(0, 200)}`);
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${checked} cells were not 404 not_found`);
    assert.equal(checked, cells.length * routesOf(targetA).length);

    assert.deepEqual(await snapshot(targetA), before.a, "nothing changed on A's session");
    assert.deepEqual(await snapshot(targetY), before.y, "nothing changed on Y's session");

    for (const caller of principals) {
      for (const baseUrl of [env.apiUrl, env.apiUrl2]) {
        const listed = await listSessionIds(caller, baseUrl);
        assert.deepEqual(new Set(listed), new Set(own.get(caller)), `${caller.name} lists exactly its own sessions on ${baseUrl}`);
      }
    }

    // And the mutating routes are real too: the owner reaches each one (archive first, so the rest are deterministic).
    for (const t of [targetA, targetY]) {
      const routes = routesOf(t).filter((r) => r.method === 'POST' && r.idempotencyKey !== t.eventKey);
      const byName = new Map(routes.map((r) => [r.name, r]));
      const archive = await attempt(t.owner, byName.get('POST archive')!);
      assert.equal(archive.status, 200, `${t.name}: the owner archives: ${archive.text}`);
      const update = await attempt(t.owner, byName.get('POST session (update)')!);
      assert.equal(update.status, 200, `${t.name}: the owner updates: ${update.text}`);
      for (const route of routes.filter((r) => r.name.startsWith('POST events'))) {
        const res = await attempt(t.owner, route);
        assert.equal(res.status, 409, `${t.name}: the owner's ${route.name} on an archived or idle session is a state conflict, not a 404: ${res.text}`);
        assert.equal(res.code, 'state_conflict');
      }
    }
  });

  it('keeps idempotency keys per principal: another caller reusing them gets its own results', async () => {
    const created = await call(b, `${API}/sessions`, { body: { agent_id: 'default-chatbot', input: 'hello there' }, idempotencyKey: targetA.createKey });
    assert.equal(created.status, 201, created.text);
    assert.notEqual(created.body.id, targetA.sessionId, "not a replay of A's session");
    const listed = await listSessionIds(b);
    assert.ok(listed.includes(created.body.id));
    assert.ok(!listed.includes(targetA.sessionId));

    const endUserCreate = await call(x, `${API}/sessions`, { body: { agent_id: 'default-chatbot', input: 'hello there' }, idempotencyKey: targetY.createKey });
    assert.equal(endUserCreate.status, 201, endUserCreate.text);
    assert.notEqual(endUserCreate.body.id, targetY.sessionId, "not a replay of Y's session");
  });

  it('refuses every admin route to an agents-access key and to an app-bound key (403), with no effect', async () => {
    const agentsKey = await createKey({ user_id: userA, access: 'agents' });
    const agentsCaller: Caller = { name: 'agents-access key', token: agentsKey.secret };
    const agentId = `bola-${randomUUID().slice(0, 8)}`;
    const put = await call(a, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Kept as is', model: 'scripted:kept', visibility: 'private' } });
    assert.equal(put.status, 201, put.text);
    // The agents key can use the public API as A…
    assert.equal((await call(agentsCaller, `${API}/${agentId}`)).status, 200);
    const aKeysBefore = await call(a, `${ADMIN}/api-keys`);
    assert.equal(aKeysBefore.status, 200);

    const admin: { name: string; method: string; path: string; body?: unknown }[] = [
      { name: 'GET api-keys', method: 'GET', path: `${ADMIN}/api-keys` },
      { name: 'POST api-keys', method: 'POST', path: `${ADMIN}/api-keys`, body: { name: 'should-not-exist', access: 'full' } },
      { name: 'DELETE api-keys/{id}', method: 'DELETE', path: `${ADMIN}/api-keys/${agentsKey.id}` },
      { name: 'GET audit', method: 'GET', path: `${ADMIN}/audit` },
      { name: 'GET agents', method: 'GET', path: `${ADMIN}/agents` },
      { name: 'PUT agents/{id}', method: 'PUT', path: `${ADMIN}/agents/${agentId}`, body: { name: 'Replaced', model: 'scripted:replaced' } },
      { name: 'DELETE agents/{id}', method: 'DELETE', path: `${ADMIN}/agents/${agentId}` },
    ];
    // And every other operation the document lists under /admin, its ids made up and its body
    // well-formed (a malformed one is refused 422 before anyone is asked who the caller is).
    const bodies: Record<string, unknown> = {
      [`PUT ${ADMIN}/secrets/{name}`]: { value: 'never stored' },
      [`PUT ${ADMIN}/users/{user_id}/role`]: { role: 'admin' },
      [`POST ${ADMIN}/sessions/{session_id}/events`]: { events: [{ type: 'yuxi.session.input.continue' }] },
      [`POST ${ADMIN}/sessions/bulk-cancel`]: { filter: { agent_id: agentId }, dry_run: true },
    };
    const document = (await call(null, '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const listed = new Set(admin.map((route) => `${route.method} ${route.path}`));
    for (const [template, item] of Object.entries(document.paths)) {
      if (!template.startsWith(`${ADMIN}/`)) continue;
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'agent_id' ? agentId : name === 'key_id' ? agentsKey.id : name === 'name' ? 'bola-secret' : randomUUID()));
      for (const method of ['get', 'post', 'put', 'delete'].filter((m) => item[m])) {
        if (listed.has(`${method.toUpperCase()} ${path}`)) continue;
        const name = `${method.toUpperCase()} ${template}`;
        admin.push({ name, method: method.toUpperCase(), path, body: method === 'get' || method === 'delete' ? undefined : (bodies[name] ?? {}) });
      }
    }
    assert.ok(admin.length > 20, `the admin operations of the document: ${admin.map((route) => route.name).join(', ')}`);
    const failures: string[] = [];
    for (const caller of [agentsCaller, app1Default, y]) {
      for (const route of admin) {
        const res = await call(caller, route.path, { method: route.method, body: route.body });
        // forbidden, or user_token_required where a route takes user tokens only.
        if (res.status !== 403 || !['forbidden', 'user_token_required'].includes(res.body?.error?.code)) failures.push(`${caller.name}: ${route.name} answered ${res.status} ${res.text.slice(0, 200)}`);
      }
    }
    assert.deepEqual(failures, []);

    const agent = await call(a, `${API}/${agentId}`);
    assert.equal(agent.status, 200, 'the agent was not deleted');
    assert.equal(agent.body.name, 'Kept as is', 'nor replaced');
    assert.equal(agent.body.yuxi.version, 1);
    const aKeysAfter = await call(a, `${ADMIN}/api-keys`);
    assert.deepEqual(aKeysAfter.body.data.map((k: any) => [k.id, k.revoked_at]), aKeysBefore.body.data.map((k: any) => [k.id, k.revoked_at]), 'no key created or revoked');
    assert.equal((await call(agentsCaller, `${API}/${agentId}`)).status, 200, 'the agents key itself still works');
  });

  it('accepts X-End-User-Id only with an app-bound key (403 otherwise, even with the caller’s own id)', async () => {
    const agentsKey = await createKey({ user_id: userA, access: 'agents' });
    const subject = `sub-${randomUUID()}`;
    const jwt = await signToken({ subject });
    assert.equal((await call({ name: 'jwt', token: jwt }, `${API}/sessions`)).status, 200, 'the token itself is valid');
    const refused: Caller[] = [
      asEndUser(a, userA, 'unbound key with its own user id'),
      asEndUser(a, 'someone', 'unbound key with another id'),
      asEndUser({ name: 'agents key', token: agentsKey.secret }, 'someone'),
      { name: 'jwt with its own subject', token: jwt, endUser: subject },
      { name: 'jwt with another id', token: jwt, endUser: 'someone' },
    ];
    for (const caller of refused) {
      for (const path of [`${API}/sessions`, `${API}/sessions/${targetA.sessionId}`, API]) {
        const res = await call(caller, path);
        assert.equal(res.status, 403, `${caller.name} on ${path}: ${res.text}`);
        assert.equal(res.body.error.code, 'forbidden');
      }
    }
  });

  it('refuses a malformed X-End-User-Id with 422 (empty, over 128 characters, surrounding whitespace), as the document declares', async () => {
    // The header's schema in the live document says the same as the server.
    const document = (await (await fetch(`${env.apiUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters?: { name: string; schema: any }[] }>> };
    const schema = document.paths[`${API}/sessions`]!.get!.parameters!.find((p) => p.name === 'X-End-User-Id')!.schema;
    const declared = (value: string) => value.length >= schema.minLength && value.length <= schema.maxLength && (schema.pattern === undefined || new RegExp(schema.pattern, 'u').test(value));
    // Leading/trailing spaces and tabs are optional whitespace in HTTP itself (RFC 9110 §5.5): no
    // client can deliver them. U+00A0 is whitespace to the api but not to HTTP, so it travels.
    for (const endUser of ['', 'x'.repeat(129), '\u00a0padded', 'padded\u00a0']) {
      const res = await call(asEndUser(app1, endUser), `${API}/sessions`);
      assert.equal(res.status, 422, `${JSON.stringify(endUser)}: ${res.text}`);
      assert.equal(res.body.error.code, 'validation_failed');
      assert.equal(declared(endUser), false, `${JSON.stringify(endUser)}: the document's schema refuses it too`);
    }
    for (const endUser of ['y'.repeat(128), 'inner space ok', 'a']) {
      assert.equal((await call(asEndUser(app1, endUser), `${API}/sessions`)).status, 200, `${JSON.stringify(endUser.slice(0, 20))} is accepted (128 characters; inner whitespace is part of the id)`);
      assert.equal(declared(endUser), true, `${JSON.stringify(endUser.slice(0, 20))}: the document's schema accepts it too`);
    }
  });

  it("answers 404 on another principal's project (read, delete, a session created in it), lists only own projects, and changes nothing", async () => {
    const projectOf = async (owner: Caller, name: string): Promise<string> => {
      const res = await call(owner, `${API}/projects`, { body: { name } });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };
    const projectA = await projectOf(a, "A's project");
    const projectY = await projectOf(y, "Y's project");
    const sessionsBefore = { a: await listSessionIds(a), y: await listSessionIds(y) };
    const cells: [Caller, string][] = [
      [b, projectA],
      [y, projectA],
      [app1Default, projectA],
      [b, projectY],
      [x, projectY],
      [app2y, projectY],
      [app1Default, projectY],
      [a, projectY],
    ];
    const failures: string[] = [];
    for (const [caller, projectId] of cells) {
      const attempts = [
        ['GET project', await call(caller, `${API}/projects/${projectId}`)],
        ['DELETE project', await call(caller, `${API}/projects/${projectId}`, { method: 'DELETE' })],
        ['POST sessions with it', await call(caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', project_id: projectId, input: 'intrude' }, idempotencyKey: newKey('bola') })],
      ] as const;
      for (const [name, res] of attempts) {
        if (res.status !== 404 || res.body?.error?.code !== 'not_found') failures.push(`${caller.name} → ${projectId}: ${name} answered ${res.status} ${res.text.slice(0, 200)}`);
      }
      const listed = await call(caller, `${API}/projects?limit=100`);
      assert.equal(listed.status, 200, listed.text);
      if (listed.body.data.some((p: any) => p.id === projectId)) failures.push(`${caller.name} lists ${projectId}`);
    }
    assert.deepEqual(failures, []);

    // Nothing changed: the owners still read their projects, and no session was created for anyone in them.
    assert.equal((await call(a, `${API}/projects/${projectA}`)).status, 200);
    assert.equal((await call(y, `${API}/projects/${projectY}`)).status, 200);
    assert.deepEqual(new Set(await listSessionIds(a)), new Set(sessionsBefore.a));
    assert.deepEqual(new Set(await listSessionIds(y)), new Set(sessionsBefore.y));
    const [{ count }] = await query<{ count: number }>(`SELECT count(*)::int AS count FROM sessions WHERE workdir_id = ANY($1::uuid[])`, [[projectA, projectY]]);
    assert.equal(count, 0, 'no session joined either workdir');
  });

  it("answers 404 on every route of another principal's cooperation tree (root and member), lists none of it, and changes nothing", async () => {
    const root = await createSessionAs(a, '[[tool:create_subagent {"task":"hidden","name":"m"}]] [[tool:wait_subagents {}]]', newKey('create'), 'coordinator');
    const stream = await openStreamAs(a, root.id);
    try {
      await stream.waitForType('agent.session.turn.completed');
    } finally {
      stream.close();
    }
    const members = await call(a, `${API}/sessions?root_session_id=${root.id}`);
    const member = (members.body.data as any[]).find((s) => s.id !== root.id);
    assert.ok(member, 'the owner lists the member through its tree');
    const memberTurn = (await call(a, `${API}/sessions/${member.id}/turns`)).body.data[0].id as string;
    const before = await query(`SELECT id, queue_paused, pending_input_count, tree_stopped_at FROM sessions WHERE root_session_id = $1 ORDER BY id`, [root.id]);
    const failures: string[] = [];
    for (const caller of [b, y, app1Default, app2y]) {
      for (const sessionId of [root.id as string, member.id as string]) {
        const s = `${API}/sessions/${sessionId}`;
        const event = (e: object) => ({ method: 'POST', body: { events: [e] }, idempotencyKey: newKey('bola') });
        const routes: [string, string, Record<string, unknown>][] = [
          ['GET session', s, {}],
          ['GET state', `${s}/state`, {}],
          ['GET queue', `${s}/queue`, {}],
          ['GET turns', `${s}/turns`, {}],
          ['GET items', `${s}/items`, {}],
          ['POST message', `${s}/events`, event({ type: 'agent.session.input.message', input: 'intrude' })],
          ['POST tree.stop', `${s}/events`, event({ type: 'yuxi.session.tree.stop' })],
          ['POST tree.continue', `${s}/events`, event({ type: 'yuxi.session.tree.continue' })],
        ];
        if (sessionId === member.id) routes.push(['GET member turn', `${s}/turns/${memberTurn}`, {}]);
        for (const [name, path, options] of routes) {
          const res = await call(caller, path, options);
          if (res.status !== 404 || res.body?.error?.code !== 'not_found') failures.push(`${caller.name} → ${name} of ${sessionId}: ${res.status} ${res.text.slice(0, 160)}`);
        }
        const sse = await openStreamAs(caller, sessionId);
        sse.close();
        if (sse.status !== 404) failures.push(`${caller.name} → SSE of ${sessionId}: ${sse.status}`);
      }
      const listed = await call(caller, `${API}/sessions?root_session_id=${root.id}`);
      if (listed.status !== 200 || listed.body.data.length !== 0) failures.push(`${caller.name} lists the tree: ${listed.status} ${listed.text.slice(0, 160)}`);
    }
    assert.deepEqual(failures, []);
    const after = await query(`SELECT id, queue_paused, pending_input_count, tree_stopped_at FROM sessions WHERE root_session_id = $1 ORDER BY id`, [root.id]);
    assert.deepEqual(after, before, 'no foreign control changed the tree');
  });

  it("answers 404 on every route of another principal's automation and its invocations, lists none of it, and changes nothing", async () => {
    const automationOf = async (owner: Caller, t: Target): Promise<any> => {
      const body = { name: 'owned', type: 'periodic', expression: '0 9 * * *', timezone: 'UTC', target: { type: 'existing_session', session_id: t.sessionId, instructions: 'check' } };
      const res = await call(owner, `${API}/automations`, { body, idempotencyKey: newKey('automation') });
      assert.equal(res.status, 201, res.text);
      const run = await call(owner, `${API}/automations/${res.body.id}/invocations`, { method: 'POST', idempotencyKey: newKey('run') });
      assert.equal(run.status, 201, run.text);
      return { ...res.body, invocationId: run.body.id };
    };
    const owned = [
      { owner: a, automation: await automationOf(a, targetA), sessionId: targetA.sessionId },
      { owner: y, automation: await automationOf(y, targetY), sessionId: targetY.sessionId },
    ];
    const failures: string[] = [];
    for (const { owner, automation, sessionId } of owned) {
      const { invocationId, ...resource } = automation;
      const routes = automationRoutesOf(automation.id, invocationId);
      // The routes are real: the owner reads them.
      for (const route of routes.filter((r) => r.method === 'GET')) {
        const res = await attempt(owner, route);
        if (res.status !== 200) failures.push(`the owner's ${route.name}: ${res.status}`);
      }
      for (const caller of [a, b, y, x, app1Default, app2y].filter((c) => c !== owner)) {
        for (const route of routes) {
          const res = await attempt(caller, route);
          if (res.status !== 404 || res.code !== 'not_found') failures.push(`${caller.name} → ${route.name} of ${owner.name}'s automation: ${res.status} ${res.text.slice(0, 160)}`);
        }
        const listed = await call(caller, `${API}/automations?session_id=${sessionId}`);
        if (listed.status !== 200 || listed.body.data.length !== 0) failures.push(`${caller.name} lists ${owner.name}'s automation: ${listed.status} ${listed.text.slice(0, 160)}`);
      }
      const after = await call(owner, `${API}/automations/${automation.id}`);
      assert.deepEqual(after.body, resource, `nothing changed on ${owner.name}'s automation`);
      const invocations = await call(owner, `${API}/automations/${automation.id}/invocations`);
      assert.deepEqual(invocations.body.data.map((v: any) => v.id), [invocationId], 'no foreign run now fired it');
    }
    assert.deepEqual(failures, []);
  });

  it("never shows app end users their key owner's private agent; the owner sees it", async () => {
    const agentId = `private-${randomUUID().slice(0, 8)}`;
    const put = await call(a, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Private to A', model: 'scripted:private', visibility: 'private' } });
    assert.equal(put.status, 201, put.text);

    assert.equal((await call(a, `${API}/${agentId}`)).status, 200, 'the owner reads it');
    assert.ok((await call(a, API)).body.data.some((agent: any) => agent.id === agentId), 'the owner lists it');
    assert.equal((await createSessionAs(a, undefined, newKey('create'), agentId)).agent.id, agentId, 'the owner runs it');

    for (const caller of [app1Default, y, x, app2y, b]) {
      const get = await call(caller, `${API}/${agentId}`);
      assert.equal(get.status, 404, `${caller.name}: GET the agent`);
      assert.equal(get.body.error.code, 'not_found');
      const list = await call(caller, API);
      assert.equal(list.status, 200);
      assert.ok(!list.body.data.some((agent: any) => agent.id === agentId), `${caller.name}: not listed`);
      const session = await call(caller, `${API}/sessions`, { body: { agent_id: agentId }, idempotencyKey: newKey('create') });
      assert.equal(session.status, 404, `${caller.name}: no session with it`);
    }
  });
});
