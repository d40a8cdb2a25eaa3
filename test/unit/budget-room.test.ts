import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Budget, type BudgetSpent, type BudgetUsage, firstBudgetWithoutRoom, NO_SPENDING, periodBounds, roomFor } from '#libs/budgets';

const spent = (values: Partial<BudgetSpent>): BudgetSpent => ({ ...NO_SPENDING, ...values });
const newTurn = { turns: 1 };
const sameTurn = { turns: 0 };

function budget(id: string, limits: Budget['limits']): Budget {
  return {
    id,
    accountId: 'a',
    createdBy: 'a',
    scopeKind: 'project',
    scopeId: 'p',
    appId: null,
    limits,
    period: 'lifetime',
    onExceeded: 'pause',
    metadata: {},
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
}

describe('the room a budget leaves for a call', () => {
  it('lets a call start while every limit is above what is committed plus reserved, and stops it at the limit', () => {
    const limits = { model_calls: 2 };
    assert.deepEqual(roomFor({ limits }, spent({ model_calls: 1 }), NO_SPENDING, newTurn), { ok: true });
    assert.deepEqual(roomFor({ limits }, spent({ model_calls: 2 }), NO_SPENDING, newTurn), { ok: false, limit: 'model_calls', limit_value: 2, spent: 2 });
    assert.deepEqual(roomFor({ limits }, spent({ model_calls: 3 }), NO_SPENDING, newTurn), { ok: false, limit: 'model_calls', limit_value: 2, spent: 3 }, 'already over: still stopped');
  });

  it('counts what calls in flight reserved, so two calls at once cannot both take the last room', () => {
    const limits = { model_calls: 1 };
    assert.deepEqual(roomFor({ limits }, NO_SPENDING, spent({ model_calls: 1 }), newTurn), { ok: false, limit: 'model_calls', limit_value: 1, spent: 1 });
    const tokens = { tokens: 1000 };
    assert.deepEqual(roomFor({ limits: tokens }, spent({ tokens: 600 }), spent({ tokens: 399 }), newTurn), { ok: true });
    assert.deepEqual(roomFor({ limits: tokens }, spent({ tokens: 600 }), spent({ tokens: 400 }), newTurn), { ok: false, limit: 'tokens', limit_value: 1000, spent: 1000 });
  });

  it('lets a call start below a token, cost or time limit whatever its size (overshoot by one call at most)', () => {
    assert.deepEqual(roomFor({ limits: { cost_microusd: 100 } }, spent({ cost_microusd: 99 }), NO_SPENDING, newTurn), { ok: true });
    assert.deepEqual(roomFor({ limits: { wall_time_s: 60 } }, spent({ wall_time_s: 59 }), NO_SPENDING, newTurn), { ok: true });
    assert.deepEqual(roomFor({ limits: { wall_time_s: 60 } }, spent({ wall_time_s: 60 }), NO_SPENDING, newTurn), { ok: false, limit: 'wall_time_s', limit_value: 60, spent: 60 });
  });

  it('never stops a turn by its own count: a turn counted already goes on, a new one needs a turn of room', () => {
    const limits = { turns: 1 };
    assert.deepEqual(roomFor({ limits }, spent({ turns: 1 }), NO_SPENDING, sameTurn), { ok: true });
    assert.deepEqual(roomFor({ limits }, spent({ turns: 1 }), NO_SPENDING, newTurn), { ok: false, limit: 'turns', limit_value: 1, spent: 1 });
    assert.deepEqual(roomFor({ limits }, NO_SPENDING, spent({ turns: 1 }), newTurn), { ok: false, limit: 'turns', limit_value: 1, spent: 1 }, 'another run opened the last turn');
    assert.deepEqual(roomFor({ limits }, NO_SPENDING, NO_SPENDING, newTurn), { ok: true });
  });

  it('answers the first limit reached, in the order of the limit keys, and ignores units without a limit', () => {
    const limits = { tokens: 10, model_calls: 1, tool_calls: 5 };
    const used = spent({ cost_microusd: 1_000_000, tokens: 50, model_calls: 1, tool_calls: 5 });
    assert.deepEqual(roomFor({ limits }, used, NO_SPENDING, newTurn), { ok: false, limit: 'tokens', limit_value: 10, spent: 50 });
    assert.deepEqual(roomFor({ limits: {} }, used, used, newTurn), { ok: true }, 'no limits: always room');
  });
});

describe('the first budget in scope without room', () => {
  const usage = (id: string, values: Partial<BudgetUsage>): [string, BudgetUsage] => [id, { budgetId: id, spent: NO_SPENDING, reserved: NO_SPENDING, turnCounted: false, clock: new Date(0), ...values }];

  it('goes through the budgets in order and names the first one reached with its limit', () => {
    const budgets = [budget('1', { model_calls: 5 }), budget('2', { tool_calls: 1 }), budget('3', { model_calls: 1 })];
    const reads = new Map([usage('1', { spent: spent({ model_calls: 1 }) }), usage('2', { reserved: spent({ tool_calls: 1 }) }), usage('3', { spent: spent({ model_calls: 1 }) })]);
    const reached = firstBudgetWithoutRoom(budgets, reads);
    assert.equal(reached?.budget.id, '2');
    assert.deepEqual({ limit: reached?.limit, limit_value: reached?.limit_value, spent: reached?.spent }, { limit: 'tool_calls', limit_value: 1, spent: 1 });
    assert.equal(firstBudgetWithoutRoom([budgets[0]!], reads), null);
  });

  it('takes a budget with no read as having spent nothing, and a turn it counted already as going on', () => {
    assert.equal(firstBudgetWithoutRoom([budget('9', { model_calls: 1 })], new Map()), null);
    const turns = [budget('1', { turns: 1 })];
    assert.equal(firstBudgetWithoutRoom(turns, new Map([usage('1', { spent: spent({ turns: 1 }), turnCounted: true })])), null);
    assert.equal(firstBudgetWithoutRoom(turns, new Map([usage('1', { spent: spent({ turns: 1 }), turnCounted: false })]))?.limit, 'turns');
  });
});

describe('the current period of a budget', () => {
  const at = (iso: string) => new Date(iso);
  const bounds = (period: 'lifetime' | 'day' | 'month', now: string) => {
    const { start, end } = periodBounds(period, at(now));
    return [start?.toISOString() ?? null, end?.toISOString() ?? null];
  };

  it('is the UTC day from midnight to the next midnight, whatever the hour', () => {
    assert.deepEqual(bounds('day', '2026-12-05T00:00:00.000Z'), ['2026-12-05T00:00:00.000Z', '2026-12-06T00:00:00.000Z'], 'midnight starts a day');
    assert.deepEqual(bounds('day', '2026-12-05T23:59:59.999Z'), ['2026-12-05T00:00:00.000Z', '2026-12-06T00:00:00.000Z']);
    assert.deepEqual(bounds('day', '2026-12-31T12:00:00.000Z'), ['2026-12-31T00:00:00.000Z', '2027-01-01T00:00:00.000Z'], 'across a year');
    assert.deepEqual(bounds('day', '2028-02-28T08:00:00.000Z'), ['2028-02-28T00:00:00.000Z', '2028-02-29T00:00:00.000Z'], 'into a leap day');
  });

  it('is the UTC calendar month, of whatever length', () => {
    assert.deepEqual(bounds('month', '2026-12-05T10:00:00.000Z'), ['2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
    assert.deepEqual(bounds('month', '2027-02-01T00:00:00.000Z'), ['2027-02-01T00:00:00.000Z', '2027-03-01T00:00:00.000Z'], 'the first instant of a month');
    assert.deepEqual(bounds('month', '2028-02-29T23:59:59.000Z'), ['2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'], 'a leap February');
    assert.deepEqual(bounds('month', '2026-04-30T23:59:59.999Z'), ['2026-04-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z'], 'a 30-day month');
  });

  it('has no bounds for a lifetime budget', () => {
    assert.deepEqual(bounds('lifetime', '2026-12-05T10:00:00.000Z'), [null, null]);
  });
});
