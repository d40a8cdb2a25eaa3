import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createValidationPipe, DomainError } from '#libs/errors';
import { CreateBudgetDto, CreateSessionDto, SetUsageClockDto, UpdateBudgetDto, UpdateSessionDto } from '#libs/protocol';

// The bodies of the budget routes and of a session's own budget, through the api's validation
// pipe (the one every route uses): which bodies pass, and which fields a refusal names.

const pipe = createValidationPipe();

async function fieldsOf(metatype: new () => object, body: unknown): Promise<string[]> {
  try {
    await pipe.transform(body, { type: 'body', metatype });
  } catch (error) {
    assert.ok(error instanceof DomainError && error.code === 'validation_failed', String(error));
    return (error.details.fields as { field: string }[]).map((f) => f.field);
  }
  return [];
}

const scope = { project_id: '0193a5b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b' };

describe('a budget body', () => {
  it('takes exactly one scope key and at least one positive integer limit, period and behaviour optional', async () => {
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope, limits: { tokens: 1 } }), []);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: { end_user_id: '' }, limits: { cost_microusd: 1e15 }, period: 'month', on_exceeded: 'fail', metadata: { a: 'b' } }), [], "the app's default end user is ''");
    for (const key of ['session_id', 'project_id', 'user_id']) assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: { [key]: scope.project_id }, limits: { turns: 1 } }), [], key);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: { app_id: 'a', agent_id: 'b' }, limits: { turns: 1 } }), ['scope']);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: {}, limits: { turns: 1 } }), ['scope']);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope, limits: {} }), ['limits']);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: 'p', limits: [] }), ['scope', 'limits']);
  });

  it('names each bad limit: zero, negative, fractional, past the bound, not a number, null, unknown', async () => {
    const limits = { cost_microusd: 0, tokens: -1, model_calls: 1.5, tool_calls: 1e15 + 1, turns: '2', wall_time_s: null, dollars: 3 };
    const fields = await fieldsOf(CreateBudgetDto, { scope, limits });
    assert.deepEqual(fields.sort(), ['limits.cost_microusd', 'limits.dollars', 'limits.model_calls', 'limits.tool_calls', 'limits.tokens', 'limits.turns', 'limits.wall_time_s'].sort());
  });

  it('refuses unknown periods, behaviours, fields and scope keys, and a session or user id that is no uuid', async () => {
    assert.deepEqual((await fieldsOf(CreateBudgetDto, { scope, limits: { turns: 1 }, period: 'week', on_exceeded: 'kill', extra: 1 })).sort(), ['extra', 'on_exceeded', 'period']);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: { team: 'x' }, limits: { turns: 1 } }), ['scope', 'scope.team']);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: { session_id: 'abc' }, limits: { turns: 1 } }), ['scope.session_id']);
    assert.deepEqual(await fieldsOf(CreateBudgetDto, { scope: { user_id: 'abc' }, limits: { turns: 1 } }), ['scope.user_id']);
  });

  it('on update takes any of limits, period, behaviour and metadata, never the scope, and no nulls', async () => {
    assert.deepEqual(await fieldsOf(UpdateBudgetDto, {}), []);
    assert.deepEqual(await fieldsOf(UpdateBudgetDto, { limits: { turns: 2 }, period: 'day', on_exceeded: 'pause', metadata: {} }), []);
    assert.deepEqual(await fieldsOf(UpdateBudgetDto, { limits: {} }), ['limits']);
    assert.deepEqual(await fieldsOf(UpdateBudgetDto, { scope }), ['scope']);
    assert.deepEqual(await fieldsOf(UpdateBudgetDto, { period: null, limits: null }), ['limits', 'period']);
  });
});

describe("a session's own budget (yuxi.budget)", () => {
  it('is a budget without scope or period on create; null is refused there', async () => {
    assert.deepEqual(await fieldsOf(CreateSessionDto, { agent_id: 'a', yuxi: { budget: { limits: { model_calls: 3 }, on_exceeded: 'fail' } } }), []);
    assert.deepEqual(await fieldsOf(CreateSessionDto, { agent_id: 'a', yuxi: { budget: { limits: {} } } }), ['yuxi.budget.limits']);
    assert.deepEqual(await fieldsOf(CreateSessionDto, { agent_id: 'a', yuxi: { budget: { limits: { turns: 1 }, period: 'day' } } }), ['yuxi.budget.period']);
    assert.deepEqual(await fieldsOf(CreateSessionDto, { agent_id: 'a', yuxi: { budget: null } }), ['yuxi.budget']);
  });

  it('on update is replaced by a new one or removed by null', async () => {
    assert.deepEqual(await fieldsOf(UpdateSessionDto, { yuxi: { budget: null } }), []);
    assert.deepEqual(await fieldsOf(UpdateSessionDto, { yuxi: { budget: { limits: { tokens: 10 } } } }), []);
    assert.deepEqual(await fieldsOf(UpdateSessionDto, { yuxi: { budget: { limits: { tokens: 0 } } } }), ['yuxi.budget.limits.tokens']);
    assert.deepEqual(await fieldsOf(UpdateSessionDto, { yuxi: { budget: 'none' } }), ['yuxi.budget']);
  });
});

describe('the usage clock body', () => {
  it('is a whole number of seconds within two years either way', async () => {
    for (const offset_s of [0, 86_400, -86_400, 2 * 366 * 86_400]) assert.deepEqual(await fieldsOf(SetUsageClockDto, { offset_s }), [], String(offset_s));
    for (const offset_s of [1.5, '60', null, 2 * 366 * 86_400 + 1, -(2 * 366 * 86_400) - 1]) assert.deepEqual(await fieldsOf(SetUsageClockDto, { offset_s }), ['offset_s'], String(offset_s));
    assert.deepEqual(await fieldsOf(SetUsageClockDto, {}), ['offset_s']);
  });
});
