import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { startFakeOpenAi } from '../support/fake-openai.js';
import { API, type HttpResult, newKey } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type Caller, createKey, newProductUser, openStreamAs } from '../support/identity.js';

// Budgets as resources: CRUD on fresh product users, what each scope may name (and who may name
// it), owner isolation, a session's own budget (`yuxi.budget`), `spent` as the sums of the calls
// the runs record, and the usage clock that moves budget periods.

const BUDGETS = `${API}/budgets`;
const CLOCK = `${ADMIN}/usage-clock`;
const GENEROUS = { model_calls: 1000, tokens: 10_000_000 };

/** A budget's `spent` but its wall time (which depends on the machine). */
function countedUnits(spent: any): Record<string, number> {
  return { cost_microusd: spent.cost_microusd, tokens: spent.tokens, model_calls: spent.model_calls, tool_calls: spent.tool_calls, turns: spent.turns };
}

function assertError(res: HttpResult, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
  assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
}

async function createBudget(caller: Caller, body: object): Promise<any> {
  const res = await call(caller, BUDGETS, { body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function newProject(caller: Caller): Promise<string> {
  const res = await call(caller, `${API}/projects`, { body: { name: 'Budgeted' } });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

async function newSession(caller: Caller, body: object = {}): Promise<HttpResult> {
  return call(caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', ...body }, idempotencyKey: newKey('create') });
}

/** Runs the session's first turn (its create input) to completion and answers the turn's usage. */
async function completedTurnUsage(caller: Caller, sessionId: string): Promise<any> {
  const stream = await openStreamAs(caller, sessionId);
  try {
    const done = await stream.waitForType('agent.session.turn.completed');
    const turn = await call(caller, `${API}/sessions/${sessionId}/turns/${done.data.turn_id}`);
    assert.equal(turn.status, 200, turn.text);
    return turn.body.yuxi.usage;
  } finally {
    stream.close();
  }
}

describe('budgets', () => {
  after(async () => {
    // The clock is the stack's: whatever a test left, later files see the real one.
    await call(bootstrap, CLOCK, { method: 'PUT', body: { offset_s: 0 } });
  });

  it('creates, reads, lists in pages, updates and deletes budgets of the caller', async () => {
    const { caller } = await newProductUser('budget owner');
    const projectId = await newProject(caller);
    const created = await createBudget(caller, { scope: { project_id: projectId }, limits: { cost_microusd: 5_000_000, turns: 10 }, period: 'day', on_exceeded: 'fail', metadata: { team: 'research' } });
    assert.equal(created.object, 'agent.budget');
    assert.deepEqual(created.scope, { project_id: projectId });
    assert.deepEqual(created.limits, { cost_microusd: 5_000_000, turns: 10 });
    assert.equal(created.period, 'day');
    assert.equal(created.on_exceeded, 'fail');
    assert.deepEqual(created.metadata, { team: 'research' });
    assert.deepEqual(created.spent, { cost_microusd: 0, tokens: 0, model_calls: 0, tool_calls: 0, turns: 0, wall_time_s: 0 });
    assert.equal(typeof created.created_at, 'number');
    assert.equal(created.period_end - created.period_start, 86400, 'a day');
    assert.equal(created.period_start % 86400, 0, 'from a UTC midnight');
    assert.ok(created.period_start <= Date.now() / 1000 + 5 && Date.now() / 1000 - 5 < created.period_end, 'the current day');

    const defaults = await createBudget(caller, { scope: { agent_id: 'default-chatbot' }, limits: { model_calls: 3 } });
    assert.equal(defaults.period, 'lifetime', 'period defaults to lifetime');
    assert.equal(defaults.on_exceeded, 'pause', 'on_exceeded defaults to pause');
    assert.deepEqual([defaults.period_start, defaults.period_end], [null, null], 'a lifetime has no bounds');
    const third = await createBudget(caller, { scope: { end_user_id: 'customer-7' }, limits: { tokens: 1000 } });

    assert.deepEqual((await call(caller, `${BUDGETS}/${created.id}`)).body, created);
    const first = await call(caller, `${BUDGETS}?limit=2`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.data.map((b: any) => b.id), [third.id, defaults.id], 'newest first');
    assert.equal(first.body.has_more, true);
    const second = await call(caller, `${BUDGETS}?limit=2&after=${first.body.last_id}`);
    assert.deepEqual(second.body.data.map((b: any) => b.id), [created.id]);
    assert.equal(second.body.has_more, false);
    const ascending = await call(caller, `${BUDGETS}?order=asc`);
    assert.deepEqual(ascending.body.data.map((b: any) => b.id), [created.id, defaults.id, third.id]);

    const updated = await call(caller, `${BUDGETS}/${created.id}`, { body: { limits: { tokens: 500 }, period: 'month', on_exceeded: 'pause', metadata: {} } });
    assert.equal(updated.status, 200, updated.text);
    assert.deepEqual(updated.body.limits, { tokens: 500 }, 'limits are replaced whole');
    assert.equal(updated.body.period, 'month');
    assert.equal(updated.body.on_exceeded, 'pause');
    assert.deepEqual(updated.body.metadata, {});
    assert.deepEqual(updated.body.scope, { project_id: projectId }, 'the scope never changes');
    const partial = await call(caller, `${BUDGETS}/${created.id}`, { body: { on_exceeded: 'fail' } });
    assert.deepEqual([partial.body.limits, partial.body.period, partial.body.on_exceeded], [{ tokens: 500 }, 'month', 'fail'], 'only the fields given change');

    const deleted = await call(caller, `${BUDGETS}/${created.id}`, { method: 'DELETE' });
    assert.deepEqual(deleted.body, { id: created.id, object: 'agent.budget', deleted: true });
    assertError(await call(caller, `${BUDGETS}/${created.id}`), 404, 'not_found');
    assertError(await call(caller, `${BUDGETS}/${created.id}`, { method: 'DELETE' }), 404, 'not_found');
    assertError(await call(caller, `${BUDGETS}/not-a-uuid`), 404, 'not_found');
    assertError(await call(caller, `${BUDGETS}?after=${created.id}`), 400, 'invalid_cursor');
  });

  it('stores a scope by the id its resource has: an upper-case spelling of a session or project id names the same one', async () => {
    const { caller } = await newProductUser('budget spelling');
    const session = await newSession(caller);
    assert.equal(session.status, 201, session.text);
    const project = await newProject(caller);
    const bySession = await createBudget(caller, { scope: { session_id: session.body.id.toUpperCase() }, limits: GENEROUS });
    assert.deepEqual(bySession.scope, { session_id: session.body.id });
    const byProject = await createBudget(caller, { scope: { project_id: project.toUpperCase() }, limits: GENEROUS });
    assert.deepEqual(byProject.scope, { project_id: project });
  });

  it('refuses malformed bodies with 422 naming the field', async () => {
    const { caller } = await newProductUser('budget validator');
    const projectId = await newProject(caller);
    const scope = { project_id: projectId };
    const cases: [string, object, string][] = [
      ['no scope', { limits: GENEROUS }, 'scope'],
      ['two scope keys', { scope: { project_id: projectId, agent_id: 'default-chatbot' }, limits: GENEROUS }, 'scope'],
      ['an empty scope', { scope: {}, limits: GENEROUS }, 'scope'],
      ['an unknown scope key', { scope: { team_id: 'x' }, limits: GENEROUS }, 'scope.team_id'],
      ['a session id that is no uuid', { scope: { session_id: 'abc' }, limits: GENEROUS }, 'scope.session_id'],
      ['no limit', { scope, limits: {} }, 'limits'],
      ['a zero limit', { scope, limits: { turns: 0 } }, 'limits.turns'],
      ['a negative limit', { scope, limits: { tokens: -5 } }, 'limits.tokens'],
      ['a fractional limit', { scope, limits: { cost_microusd: 1.5 } }, 'limits.cost_microusd'],
      ['a limit past the bound', { scope, limits: { tokens: 1e16 } }, 'limits.tokens'],
      ['a limit as a string', { scope, limits: { model_calls: '5' } }, 'limits.model_calls'],
      ['an unknown limit', { scope, limits: { dollars: 5 } }, 'limits.dollars'],
      ['a null limit', { scope, limits: { tokens: null, turns: 1 } }, 'limits.tokens'],
      ['an unknown period', { scope, limits: GENEROUS, period: 'week' }, 'period'],
      ['an unknown behaviour', { scope, limits: GENEROUS, on_exceeded: 'stop' }, 'on_exceeded'],
      ['an unknown field', { scope, limits: GENEROUS, owner: 'me' }, 'owner'],
    ];
    for (const [name, body, field] of cases) {
      const res = await call(caller, BUDGETS, { body });
      assertError(res, 422, 'validation_failed');
      assert.ok(res.body.error.details.fields.some((f: any) => f.field === field), `${name}: ${res.text}`);
    }
    const budget = await createBudget(caller, { scope, limits: GENEROUS });
    for (const body of [{ limits: {} }, { limits: { turns: 0 } }, { period: null }, { scope: { agent_id: 'default-chatbot' } }]) {
      assertError(await call(caller, `${BUDGETS}/${budget.id}`, { body }), 422, 'validation_failed');
    }
    assert.deepEqual((await call(caller, `${BUDGETS}/${budget.id}`)).body.limits, GENEROUS, 'nothing changed');
  });

  it("keeps budgets to their account: another user's budget and scopes are not found, and lists show only one's own", async () => {
    const { caller: alice } = await newProductUser('budget alice');
    const { caller: bob } = await newProductUser('budget bob');
    const aliceProject = await newProject(alice);
    const aliceSession = (await newSession(alice)).body.id;
    const budget = await createBudget(alice, { scope: { project_id: aliceProject }, limits: GENEROUS });
    for (const res of [
      await call(bob, `${BUDGETS}/${budget.id}`),
      await call(bob, `${BUDGETS}/${budget.id}`, { body: { limits: { turns: 1 } } }),
      await call(bob, `${BUDGETS}/${budget.id}`, { method: 'DELETE' }),
      await call(bob, BUDGETS, { body: { scope: { project_id: aliceProject }, limits: GENEROUS } }),
      await call(bob, BUDGETS, { body: { scope: { session_id: aliceSession }, limits: GENEROUS } }),
      await call(bob, BUDGETS, { body: { scope: { session_id: randomUUID() }, limits: GENEROUS } }),
      await call(bob, BUDGETS, { body: { scope: { agent_id: `no-such-agent-${randomUUID().slice(0, 8)}` }, limits: GENEROUS } }),
    ]) {
      assertError(res, 404, 'not_found');
    }
    assertError(await call(bob, `${BUDGETS}?after=${budget.id}`), 400, 'invalid_cursor');
    assert.deepEqual((await call(bob, BUDGETS)).body.data, [], 'none of alice\'s budgets is listed for bob');
    const kept = await call(alice, `${BUDGETS}/${budget.id}`);
    assert.deepEqual(kept.body.limits, GENEROUS, 'nothing changed');
  });

  it('lets only administrators bind a whole account (user_id: 403 to others), which its user reads but cannot lift', async () => {
    const { caller: user, userId } = await newProductUser('budgeted account');
    const refused = await call(user, BUDGETS, { body: { scope: { user_id: userId }, limits: GENEROUS } });
    assertError(refused, 403, 'forbidden');
    assertError(await call(bootstrap, BUDGETS, { body: { scope: { user_id: randomUUID() }, limits: GENEROUS } }), 404, 'not_found');

    const bound = await createBudget(bootstrap, { scope: { user_id: userId }, limits: GENEROUS, period: 'month' });
    assert.deepEqual(bound.scope, { user_id: userId });
    const seen = await call(user, `${BUDGETS}/${bound.id}`);
    assert.equal(seen.status, 200, 'the bound user reads it');
    assertError(await call(user, `${BUDGETS}/${bound.id}`, { body: { limits: { model_calls: 1_000_000 } } }), 403, 'forbidden');
    assertError(await call(user, `${BUDGETS}/${bound.id}`, { method: 'DELETE' }), 403, 'forbidden');
    assert.equal((await call(bootstrap, `${BUDGETS}/${bound.id}`)).status, 200, 'the administrator who made it reads it');
    assert.equal((await call(bootstrap, `${BUDGETS}/${bound.id}`, { method: 'DELETE' })).status, 200);
  });

  it('lets an app-bound key budget its own app and its end users only', async () => {
    const { userId } = await newProductUser('app owner');
    const appId = `app-${randomUUID().slice(0, 8)}`;
    const key = await createKey({ user_id: userId, app_id: appId });
    const app: Caller = asEndUser({ name: 'app key', token: key.secret }, 'customer-1');
    const own = await createBudget(app, { scope: { app_id: appId }, limits: GENEROUS });
    assert.deepEqual(own.scope, { app_id: appId });
    assertError(await call(app, BUDGETS, { body: { scope: { app_id: 'another-app' }, limits: GENEROUS } }), 404, 'not_found');
    const endUser = await createBudget(app, { scope: { end_user_id: 'customer-2' }, limits: GENEROUS });
    assert.deepEqual(endUser.scope, { end_user_id: 'customer-2' });
    const listed = await call(app, BUDGETS);
    assert.deepEqual(listed.body.data.map((b: any) => b.id), [endUser.id, own.id], 'the app acts for its account');
  });

  it("keeps an app's budgets to its app: another app's and the account's own are 404 to its key, the product user manages them all", async () => {
    const { caller: owner, userId } = await newProductUser('apps owner');
    const appKey = async (app: string): Promise<Caller> => ({ name: `${app} key`, token: (await createKey({ user_id: userId, app_id: app })).secret });
    const keyA = await appKey(`app-a-${randomUUID().slice(0, 8)}`);
    const keyB = await appKey(`app-b-${randomUUID().slice(0, 8)}`);
    const ofA = await createBudget(asEndUser(keyA, 'customer-a'), { scope: { agent_id: 'default-chatbot' }, limits: GENEROUS });
    const ofB = await createBudget(asEndUser(keyB, 'customer-b'), { scope: { end_user_id: 'customer-b' }, limits: GENEROUS });
    const ofOwner = await createBudget(owner, { scope: { agent_id: 'default-chatbot' }, limits: GENEROUS });
    const ids = async (caller: Caller) => (await call(caller, BUDGETS)).body.data.map((b: any) => b.id);
    // A session's own budget set through the app's key is the app's too.
    const budgeted = await newSession(asEndUser(keyA, 'customer-a'), { yuxi: { budget: { limits: GENEROUS } } });
    assert.equal(budgeted.status, 201, budgeted.text);
    const ofSession = budgeted.body.yuxi.budget.id;
    assert.deepEqual((await call(asEndUser(keyA, 'customer-a'), `${BUDGETS}/${ofSession}`)).body.scope, { session_id: budgeted.body.id });
    assertError(await call(asEndUser(keyB, 'customer-a'), `${BUDGETS}/${ofSession}`), 404, 'not_found');
    for (const caller of [asEndUser(keyA, 'customer-a'), asEndUser(keyA, undefined)]) {
      for (const other of [ofB, ofOwner]) {
        assertError(await call(caller, `${BUDGETS}/${other.id}`), 404, 'not_found');
        assertError(await call(caller, `${BUDGETS}/${other.id}`, { body: { limits: { model_calls: 1 } } }), 404, 'not_found');
        assertError(await call(caller, `${BUDGETS}/${other.id}`, { method: 'DELETE' }), 404, 'not_found');
        assertError(await call(caller, `${BUDGETS}?after=${other.id}`), 400, 'invalid_cursor');
      }
      assert.deepEqual(await ids(caller), [ofSession, ofA.id], `${caller.name} lists its app's budgets only`);
    }
    // The app's backend holds the key: any end user it names (or none) manages the app's budgets.
    const raised = await call(asEndUser(keyA, 'customer-z'), `${BUDGETS}/${ofA.id}`, { body: { limits: { model_calls: 2000 } } });
    assert.equal(raised.status, 200, raised.text);
    assert.deepEqual(await ids(owner), [ofSession, ofOwner.id, ofB.id, ofA.id], "the product user sees its apps' budgets and its own");
    assert.deepEqual((await call(owner, `${BUDGETS}/${ofB.id}`)).body.scope, { end_user_id: 'customer-b' });
    assert.equal((await call(owner, `${BUDGETS}/${ofA.id}`, { body: { limits: GENEROUS } })).status, 200, "the product user changes an app's budget");
    assert.equal((await call(owner, `${BUDGETS}/${ofB.id}`, { method: 'DELETE' })).status, 200, "and deletes one");
    assert.deepEqual((await call(owner, `${BUDGETS}/${ofOwner.id}`)).body.limits, GENEROUS, 'nothing the app key tried changed the account\'s');
  });

  it("takes a session's own budget on create and update (null removes it) and shows it as yuxi.budget", async () => {
    const { caller } = await newProductUser('session budgets');
    const created = await newSession(caller, { yuxi: { budget: { limits: { model_calls: 50 } } } });
    assert.equal(created.status, 201, created.text);
    const budget = created.body.yuxi.budget;
    assert.deepEqual({ limits: budget.limits, on_exceeded: budget.on_exceeded }, { limits: { model_calls: 50 }, on_exceeded: 'pause' });
    const resource = await call(caller, `${BUDGETS}/${budget.id}`);
    assert.deepEqual([resource.body.scope, resource.body.period], [{ session_id: created.body.id }, 'lifetime']);

    const read = await call(caller, `${API}/sessions/${created.body.id}`);
    assert.deepEqual(read.body.yuxi.budget, { ...budget, spent: { cost_microusd: 0, tokens: 0, model_calls: 0, tool_calls: 0, turns: 0, wall_time_s: 0 } });
    const listed = await call(caller, `${API}/sessions`);
    assert.deepEqual(listed.body.data.find((s: any) => s.id === created.body.id).yuxi.budget, budget, 'lists show it without spent');

    const replaced = await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { budget: { limits: { turns: 5, tokens: 900 }, on_exceeded: 'fail' }, title: 'Budgeted' } } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body.yuxi.budget, { id: budget.id, limits: { turns: 5, tokens: 900 }, on_exceeded: 'fail' }, 'the same budget, replaced');
    assert.equal(replaced.body.yuxi.title, 'Budgeted');
    const untouched = await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { title: 'Renamed' } } });
    assert.deepEqual(untouched.body.yuxi.budget, replaced.body.yuxi.budget, 'an update without it keeps it');

    assertError(await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { budget: { limits: {} } } } }), 422, 'validation_failed');
    assertError(await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { budget: { limits: { turns: 1 }, on_exceeded: 'stop' } } } }), 422, 'validation_failed');
    assertError(await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { budget: { limits: { turns: 1 } }, title: 'x' } }, headers: { 'if-match': '"999"' } }), 412, 'revision_mismatch');
    assert.deepEqual((await call(caller, `${BUDGETS}/${budget.id}`)).body.limits, { turns: 5, tokens: 900 }, 'a refused update changed no budget');
    // A change of the budget alone is an update: it checks If-Match and moves the revision.
    const revision = untouched.body.yuxi.revision as number;
    const budgetOnly = await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { budget: { limits: { turns: 6 } } } }, headers: { 'if-match': `"${revision}"` } });
    assert.equal(budgetOnly.status, 200, budgetOnly.text);
    assert.equal(budgetOnly.body.yuxi.revision, revision + 1);
    assertError(await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { budget: { limits: { turns: 7 } } } }, headers: { 'if-match': `"${revision}"` } }), 412, 'revision_mismatch');
    assert.deepEqual((await call(caller, `${BUDGETS}/${budget.id}`)).body.limits, { turns: 6 });

    const removed = await call(caller, `${API}/sessions/${created.body.id}`, { body: { yuxi: { budget: null } } });
    assert.equal(removed.status, 200, removed.text);
    assert.equal(removed.body.yuxi.budget, null);
    assertError(await call(caller, `${BUDGETS}/${budget.id}`), 404, 'not_found');
    assert.equal((await newSession(caller)).body.yuxi.budget, null, 'a session created without one has none');
    assertError(await newSession(caller, { yuxi: { budget: { limits: { model_calls: 0 } } } }), 422, 'validation_failed');
    assertError(await newSession(caller, { yuxi: { budget: null } }), 422, 'validation_failed');
  });

  it('shows as spent what the runs recorded, per scope, and the usage clock moves day and month periods', async () => {
    const { caller } = await newProductUser('budget spender');
    const projectId = await newProject(caller);
    const created = await newSession(caller, { project_id: projectId, input: '[[tool:calculator {"expression":"6*7"}]]', yuxi: { budget: { limits: GENEROUS } } });
    assert.equal(created.status, 201, created.text);
    const sessionId = created.body.id;
    const usage = await completedTurnUsage(caller, sessionId);
    assert.equal(usage.model_calls, 2, 'the tool call and the answer');
    assert.equal(usage.tool_calls, 1);
    const expected = { cost_microusd: usage.cost_microusd ?? 0, tokens: usage.input_tokens + usage.output_tokens, model_calls: 2, tool_calls: 1, turns: 1 };
    const spentOf = (budget: any) => countedUnits(budget.spent);

    const project = await createBudget(caller, { scope: { project_id: projectId }, limits: GENEROUS });
    const day = await createBudget(caller, { scope: { agent_id: 'default-chatbot' }, limits: GENEROUS, period: 'day' });
    const month = await createBudget(caller, { scope: { agent_id: 'default-chatbot' }, limits: GENEROUS, period: 'month' });
    const other = await createBudget(caller, { scope: { project_id: await newProject(caller) }, limits: GENEROUS });
    for (const budget of [project, day, month]) assert.deepEqual(spentOf(budget), expected, `${budget.period} ${JSON.stringify(budget.scope)}`);
    assert.equal(typeof project.spent.wall_time_s, 'number');
    assert.equal(other.spent.model_calls, 0, 'another project spent nothing');
    const session = await call(caller, `${API}/sessions/${sessionId}`);
    assert.deepEqual(spentOf(session.body.yuxi.budget), expected, "the session's own budget");
    const { caller: stranger } = await newProductUser('budget stranger');
    assert.equal((await createBudget(stranger, { scope: { agent_id: 'default-chatbot' }, limits: GENEROUS })).spent.model_calls, 0, "another account's calls are not counted");

    // 32 days on: past the end of any day and any month.
    const moved = await call(bootstrap, CLOCK, { method: 'PUT', body: { offset_s: 32 * 86400 } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.offset_s, 32 * 86400);
    assert.ok(Math.abs(moved.body.now - (Date.now() / 1000 + 32 * 86400)) < 300, `the usage clock reads 32 days on: ${moved.text}`);
    const read = async (id: string) => spentOf((await call(caller, `${BUDGETS}/${id}`)).body);
    assert.equal((await read(day.id)).model_calls, 0, 'a new day');
    const movedDay = (await call(caller, `${BUDGETS}/${day.id}`)).body;
    assert.equal(movedDay.period_start, Math.floor(moved.body.now / 86400) * 86400, "the day shown is the usage clock's");
    assert.equal((await read(month.id)).model_calls, 0, 'a new month');
    assert.deepEqual(await read(project.id), expected, 'a lifetime budget keeps every call');
    assert.equal((await call(bootstrap, CLOCK, { method: 'PUT', body: { offset_s: 0 } })).body.offset_s, 0);
    assert.deepEqual(await read(day.id), expected, 'the clock back: today again');
  });

  it('sums each unit of the calls in scope at the price in force: tokens, cost, model and tool calls, turns', async () => {
    const fake = await startFakeOpenAi(env.fakeOpenAiPort);
    const { id: agentId, model } = await putAgent({ instructions: 'Use the calculator.', tools: [{ type: 'builtin', name: 'calculator' }] });
    const price = `${ADMIN}/model-prices/${encodeURIComponent(model)}`;
    try {
      // USD per million tokens is micro-dollars per token.
      assert.equal((await call(bootstrap, price, { method: 'PUT', body: { input_per_mtok_usd: 2, output_per_mtok_usd: 8 } })).status, 201);
      fake.script(fakeModel(model), [
        { tool_calls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"6*7"}' }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
        { text: 'It is 42.', usage: { prompt_tokens: 120, completion_tokens: 5 } },
      ]);
      const agentBudget = await createBudget(bootstrap, { scope: { agent_id: agentId }, limits: GENEROUS });
      assert.equal(agentBudget.spent.model_calls, 0);
      const created = await call(bootstrap, `${API}/sessions`, { body: { agent_id: agentId, input: 'What is 6*7?', yuxi: { budget: { limits: GENEROUS } } }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      await completedTurnUsage(bootstrap, created.body.id);
      // 100*2 + 10*8 = 280, then 120*2 + 5*8 = 280.
      const expected = { cost_microusd: 560, tokens: 235, model_calls: 2, tool_calls: 1, turns: 1 };
      assert.deepEqual(countedUnits((await call(bootstrap, `${BUDGETS}/${agentBudget.id}`)).body.spent), expected, 'the agent budget');
      assert.deepEqual(countedUnits((await call(bootstrap, `${API}/sessions/${created.body.id}`)).body.yuxi.budget.spent), expected, "the session's own budget");
    } finally {
      await call(bootstrap, price, { method: 'DELETE' });
      await fake.close();
    }
  });

  it('lets only administrators move the usage clock, within bounds, and only where the deployment allows it', async () => {
    const { caller } = await newProductUser('clock mover');
    assertError(await call(caller, CLOCK, { method: 'PUT', body: { offset_s: 60 } }), 403, 'forbidden');
    assertError(await call(caller, CLOCK, { method: 'PUT', body: {} }), 403, 'forbidden');
    for (const body of [{}, { offset_s: 1.5 }, { offset_s: '60' }, { offset_s: 3 * 366 * 86400 }, { offset_s: -3 * 366 * 86400 }]) {
      assertError(await call(bootstrap, CLOCK, { method: 'PUT', body }), 422, 'validation_failed');
    }
    // The file-limits replica runs with the deployment's default (USAGE_CLOCK_ADJUSTABLE unset):
    // the route is not there, for an administrator as for anyone (a fresh one: that replica
    // counts each user's requests tightly).
    const { caller: admin, userId } = await newProductUser('clock admin');
    assert.equal((await call(bootstrap, `${ADMIN}/users/${userId}/role`, { method: 'PUT', body: { role: 'admin' } })).status, 200);
    assertError(await call(admin, CLOCK, { method: 'PUT', body: { offset_s: 60 }, baseUrl: env.apiUrlFileLimits }), 404, 'route_not_found');
    assert.equal((await call(admin, CLOCK, { method: 'PUT', body: { offset_s: 0 } })).status, 200, 'the same administrator moves it where it is allowed');
  });
});
