import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type BudgetSpent, firstReached, type ScopedBudget } from '#libs/budgets';

// The room rule a budgeted call must pass: for every limit of every budget in scope, spent + reserved < limit.
const budget = (id: string, limits: ScopedBudget['limits'], onExceeded: 'pause' | 'fail' = 'pause'): ScopedBudget => ({ id, scopeKind: 'project', scopeId: 'p', limits, period: 'day', onExceeded });
const spent = (values: Partial<BudgetSpent>): BudgetSpent => ({ cost_microusd: 0, tokens: 0, model_calls: 0, tool_calls: 0, turns: 0, wall_time_s: 0, ...values });

describe('budget room', () => {
  it('a call may start while every limit is above what was spent and reserved', () => {
    assert.equal(firstReached([budget('b1', { model_calls: 2, tokens: 100 })], new Map([['b1', spent({ model_calls: 1, tokens: 99 })]])), null);
    assert.equal(firstReached([budget('b1', {})], new Map([['b1', spent({ model_calls: 100 })]])), null, 'a budget without limits never stops a call');
    assert.equal(firstReached([], new Map()), null);
  });

  it('a limit reached (not only passed) stops the call, naming the budget, the limit, its value and what was spent', () => {
    const found = firstReached([budget('b1', { cost_microusd: 5_000_000 }), budget('b2', { tool_calls: 3 }, 'fail')], new Map([['b1', spent({ cost_microusd: 10 })], ['b2', spent({ tool_calls: 3 })]]));
    assert.deepEqual(found, { budgetId: 'b2', scope: { kind: 'project', id: 'p' }, limit: 'tool_calls', limitValue: 3, spent: 3, onExceeded: 'fail' });
  });

  it('a limit of 0 allows nothing; a budget whose spending was not read counts as spending nothing', () => {
    assert.equal(firstReached([budget('b1', { turns: 0 })], new Map())?.limit, 'turns');
    assert.equal(firstReached([budget('b1', { turns: 1 })], new Map()), null);
  });
});
