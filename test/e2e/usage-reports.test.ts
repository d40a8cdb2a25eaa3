import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { fakeModel, putAgent } from '../support/agents.js';
import { statusOf, userWithRole } from '../support/console-users.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type Caller, createKey, newProductUser } from '../support/identity.js';

// Usage reports on the real stack: turns run against a fake model (scripted tokens, a builtin tool
// call), then every report is checked against the usage the runs themselves show.

const UNITS = ['input_tokens', 'output_tokens', 'cached_tokens', 'model_calls', 'tool_calls'] as const;
type Sums = Record<(typeof UNITS)[number], number>;
const KEYS = ['day', 'agent', 'model', 'session', 'project', 'app', 'end_user'] as const;

const DAY_MS = 86_400_000;
/** A range around today wide enough for a usage clock another suite moved by a few days. */
const RANGE = `from=${new Date(Date.now() - 60 * DAY_MS).toISOString().slice(0, 10)}&to=${new Date(Date.now() + 60 * DAY_MS).toISOString().slice(0, 10)}`;

const zero = (): Sums => ({ input_tokens: 0, output_tokens: 0, cached_tokens: 0, model_calls: 0, tool_calls: 0 });
function add(into: Sums, more: Sums): Sums {
  for (const unit of UNITS) into[unit] += more[unit];
  return into;
}
const unitsOf = (row: any): Sums => Object.fromEntries(UNITS.map((unit) => [unit, row[unit]])) as Sums;

/** A session that ran to completion, with the sum of its runs' usage and the keys a report groups it by. */
interface Ran {
  id: string;
  owner: Caller;
  agent: string;
  model: string;
  project: string | null;
  app: string | null;
  endUser: string | null;
  usage: Sums;
}

async function report(caller: Caller, query: string, path = `${API}/usage`): Promise<any> {
  const res = await call(caller, `${path}?${query}`);
  assert.equal(res.status, 200, `${caller.name} ${path}?${query}: ${res.text}`);
  return res.body;
}

/** The report's rows by key (end users by app and id), units only. */
function byKey(body: any): Map<string, Sums> {
  return new Map(body.data.map((row: any) => [body.group_by === 'end_user' ? `${row.app_id}/${row.key}` : String(row.key), unitsOf(row)]));
}

/** What a report of these sessions grouped by `key` must show. */
function expected(sessions: Ran[], key: (typeof KEYS)[number]): Map<string, Sums> {
  const groups = new Map<string, Sums>();
  for (const session of sessions) {
    const group = {
      day: 'all days',
      agent: session.agent,
      model: session.model,
      session: session.id,
      project: String(session.project),
      app: String(session.app),
      end_user: session.app === null ? 'null/null' : `${session.app}/${session.endUser}`,
    }[key];
    // A tool call has no model: grouped by model, it falls in the null group.
    if (key === 'model' && session.usage.tool_calls > 0) {
      groups.set(group, add(groups.get(group) ?? zero(), { ...session.usage, tool_calls: 0 }));
      groups.set('null', add(groups.get('null') ?? zero(), { ...zero(), tool_calls: session.usage.tool_calls }));
    } else {
      groups.set(group, add(groups.get(group) ?? zero(), session.usage));
    }
  }
  return groups;
}

describe('usage reports', () => {
  let fake: FakeOpenAi;
  const suffix = randomUUID().slice(0, 8);
  const app = `shop-${suffix}`;
  let owner: { userId: string; caller: Caller };
  let other: { userId: string; caller: Caller };
  let appKey: Caller;
  let tools: { id: string; model: string };
  let chat: { id: string; model: string };
  let ofOwner: Ran[];
  let ofOther: Ran;
  let project: string;

  async function projectOf(caller: Caller): Promise<string> {
    const res = await call(caller, `${API}/projects`, { body: { name: `usage ${suffix}` } });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }

  /** Runs one turn as `caller` to completion; the sum of its runs' usage as the turn shows it. */
  async function run(caller: Caller, agent: { id: string; model: string }, body: Record<string, unknown>, keys: Pick<Ran, 'project' | 'app' | 'endUser'>): Promise<Ran> {
    const created = await call(caller, `${API}/sessions`, { body: { agent_id: agent.id, input: 'go', ...body }, idempotencyKey: newKey('usage') });
    assert.equal(created.status, 201, created.text);
    await statusOf(caller, created.body.id, 'completed');
    const turns = await call(caller, `${API}/sessions/${created.body.id}/turns?limit=100`);
    const usage = zero();
    for (const turn of turns.body.data) {
      const detail = await call(caller, `${API}/sessions/${created.body.id}/turns/${turn.id}`);
      for (const one of detail.body.yuxi.runs) add(usage, { ...zero(), ...Object.fromEntries(UNITS.map((unit) => [unit, one.usage?.[unit] ?? 0])) });
    }
    return { id: created.body.id, owner: caller, agent: agent.id, model: agent.model, usage, ...keys };
  }

  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    tools = await putAgent({ tools: [{ type: 'builtin', name: 'calculator' }] });
    chat = await putAgent({});
    owner = await newProductUser(`usage owner ${suffix}`);
    other = await newProductUser(`usage other ${suffix}`);
    appKey = { name: 'app key', token: (await createKey({ user_id: owner.userId, app_id: app })).secret };
    fake.script(fakeModel(tools.model), [
      { tool_calls: [{ id: 'calc_1', name: 'calculator', arguments: '{"expression":"6*7"}' }], usage: { prompt_tokens: 120, completion_tokens: 9, cached: 20 } },
      { text: 'It is 42.', usage: { prompt_tokens: 150, completion_tokens: 5 } },
    ]);
    // One script step per turn of the chat agent, each with its own counts.
    fake.script(
      fakeModel(chat.model),
      [31, 47, 53, 61].map((n) => ({ text: `reply ${n}`, usage: { prompt_tokens: n, completion_tokens: n % 10 } })),
    );
    const noApp = { app: null, endUser: null };
    project = await projectOf(owner.caller);
    const bobs = await projectOf(asEndUser(appKey, 'bob'));
    ofOwner = [
      await run(owner.caller, tools, { project_id: project }, { project, ...noApp }),
      await run(owner.caller, chat, {}, { project: null, ...noApp }),
      await run(asEndUser(appKey, 'alice'), chat, {}, { project: null, app, endUser: 'alice' }),
      await run(asEndUser(appKey, 'bob'), chat, { project_id: bobs }, { project: bobs, app, endUser: 'bob' }),
    ];
    ofOther = await run(other.caller, chat, {}, { project: null, app: null, endUser: null });
  });
  after(async () => {
    await fake?.close();
  });

  it('grouped by each key, the caller\'s report equals the sum of its sessions\' runs', async () => {
    assert.ok(ofOwner[0]!.usage.model_calls >= 2 && ofOwner[0]!.usage.tool_calls === 1, `the tool session made two model calls and a tool call: ${JSON.stringify(ofOwner[0]!.usage)}`);
    for (const key of KEYS) {
      const body = await report(owner.caller, `group_by=${key}&${RANGE}`);
      assert.equal(body.object, 'list');
      assert.equal(body.group_by, key);
      assert.equal(body.has_more, false);
      let rows = byKey(body);
      // Days: however many the runs spread over (midnight may fall between them), they sum to the total.
      if (key === 'day') {
        for (const day of rows.keys()) assert.match(day, /^\d{4}-\d{2}-\d{2}$/);
        rows = new Map([['all days', [...rows.values()].reduce(add, zero())]]);
      }
      assert.deepEqual(rows, expected(ofOwner, key), `group_by=${key}`);
      for (const row of body.data) assert.equal(row.cost_microusd, null, `no model here has a price: ${JSON.stringify(row)}`);
    }
  });

  it('costs each call at the price in force when it was made: a later price never rewrites it', async () => {
    const priced = await putAgent({});
    const setPrice = async (input: number, output: number) => {
      const res = await call(bootstrap, `${ADMIN}/model-prices/${encodeURIComponent(priced.model)}`, { method: 'PUT', body: { input_per_mtok_usd: input, output_per_mtok_usd: output } });
      assert.ok(res.status === 200 || res.status === 201, res.text);
    };
    fake.script(fakeModel(priced.model), [
      { text: 'one', usage: { prompt_tokens: 1000, completion_tokens: 100 } },
      { text: 'two', usage: { prompt_tokens: 2000, completion_tokens: 300 } },
    ]);
    const buyer = await newProductUser(`usage buyer ${suffix}`);
    await setPrice(2, 10);
    const first = await run(buyer.caller, priced, {}, { project: null, app: null, endUser: null });
    await setPrice(3, 30.5);
    const second = await run(buyer.caller, priced, {}, { project: null, app: null, endUser: null });
    const cost = new Map((await report(buyer.caller, `group_by=session&${RANGE}`)).data.map((row: any) => [row.key, row.cost_microusd]));
    // USD per million tokens is micro-dollars per token.
    assert.deepEqual(cost, new Map([[second.id, 2000 * 3 + 300 * 30.5], [first.id, 1000 * 2 + 100 * 10]]));
    const byAgent = (await report(buyer.caller, `group_by=agent&${RANGE}`)).data;
    assert.deepEqual(byAgent.map((row: any) => [row.key, row.cost_microusd]), [[priced.id, 3000 + 15_150]]);
  });

  it('an app key reads its app\'s end users, or only the one it names; another owner\'s usage never appears', async () => {
    const appSessions = ofOwner.filter((s) => s.app === app);
    assert.deepEqual(byKey(await report(appKey, `group_by=session&${RANGE}`)), expected(appSessions, 'session'));
    assert.deepEqual(byKey(await report(asEndUser(appKey, 'alice'), `group_by=session&${RANGE}`)), expected(appSessions.filter((s) => s.endUser === 'alice'), 'session'));
    assert.deepEqual(byKey(await report(asEndUser(appKey, 'carol'), `group_by=agent&${RANGE}`)), new Map(), 'an end user without usage reads nothing');

    assert.deepEqual(byKey(await report(other.caller, `group_by=session&${RANGE}`)), expected([ofOther], 'session'));
    const mine = byKey(await report(owner.caller, `group_by=session&${RANGE}`));
    assert.equal(mine.has(ofOther.id), false, 'the other owner\'s session is not in the owner\'s report');
    // Both ran the chat agent: each one's agent row holds only their own sessions.
    assert.deepEqual(byKey(await report(other.caller, `group_by=agent&${RANGE}`)), new Map([[chat.id, ofOther.usage]]));
  });

  it('the admin route reads across owners, narrowed by its filters, for operators and administrators only', async () => {
    const all = [...ofOwner, ofOther];
    const acrossOwners = byKey(await report(bootstrap, `group_by=session&agent_id=${chat.id}&${RANGE}`, `${ADMIN}/usage`));
    assert.deepEqual(acrossOwners, expected(all.filter((s) => s.agent === chat.id), 'session'));
    assert.deepEqual(byKey(await report(bootstrap, `group_by=end_user&account_id=${owner.userId}&${RANGE}`, `${ADMIN}/usage`)), expected(ofOwner, 'end_user'));
    assert.deepEqual(byKey(await report(bootstrap, `group_by=agent&project_id=${project}&${RANGE}`, `${ADMIN}/usage`)), expected(all.filter((s) => s.project === project), 'agent'));
    assert.deepEqual(byKey(await report(bootstrap, `group_by=app&app_id=${app}&${RANGE}`, `${ADMIN}/usage`)), expected(ofOwner.filter((s) => s.app === app), 'app'));

    const operator = await userWithRole(`usage operator ${suffix}`, 'operator');
    assert.deepEqual(byKey(await report(operator.caller, `group_by=session&account_id=${other.userId}&${RANGE}`, `${ADMIN}/usage`)), expected([ofOther], 'session'));
    const viewer = await userWithRole(`usage viewer ${suffix}`, 'viewer');
    for (const caller of [owner.caller, viewer.caller, appKey]) {
      const refused = await call(caller, `${ADMIN}/usage?${RANGE}`);
      assert.equal(refused.status, 403, `${caller.name}: ${refused.text}`);
      assert.equal(refused.body.error.code, 'forbidden');
    }
  });

  it('caps the groups with `limit` and says there were more', async () => {
    const body = await report(owner.caller, `group_by=session&limit=2&${RANGE}`);
    assert.equal(body.data.length, 2);
    assert.equal(body.has_more, true);
    const full = await report(owner.caller, `group_by=session&${RANGE}`);
    assert.deepEqual(body.data, full.data.slice(0, 2), 'the first groups of the same order');
  });

  it('refuses bad parameters with 422 naming the field', async () => {
    const cases: [string, string][] = [
      ['group_by=user', 'group_by'],
      ['from=2026-13-01', 'from'],
      ['to=tomorrow', 'to'],
      ['from=2026-12-05&to=2026-12-01', 'from'],
      ['from=2024-01-01&to=2025-06-01', 'to'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['colour=blue', 'colour'],
    ];
    for (const [query, field] of cases) {
      for (const path of [`${API}/usage`, `${ADMIN}/usage`]) {
        const res = await call(bootstrap, `${path}?${query}`);
        assert.equal(res.status, 422, `${path}?${query}: ${res.text}`);
        assert.equal(res.body.error.code, 'validation_failed');
        assert.ok(res.body.error.details.fields.some((f: any) => f.field === field), `${query}: ${res.text}`);
      }
    }
    const badAccount = await call(bootstrap, `${ADMIN}/usage?account_id=not-a-uuid`);
    assert.equal(badAccount.status, 422, badAccount.text);
  });
});
