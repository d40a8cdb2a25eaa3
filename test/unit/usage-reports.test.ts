import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { ownUsageScope } from '#libs/protocol';
import { parseInstant, parseUsageReport, toUsageReportRow, USAGE_REPORT_DEFAULT_GROUPS, USAGE_REPORT_MAX_DAYS } from '#libs/usage';

const NOW = new Date('2026-12-05T10:30:00Z');

/** The fields a 422 names, with their messages. */
function refused(params: Parameters<typeof parseUsageReport>[0]): Record<string, string[]> {
  try {
    parseUsageReport(params, NOW);
  } catch (error) {
    assert.ok(error instanceof DomainError);
    assert.equal(error.code, 'validation_failed');
    return Object.fromEntries((error.details.fields as { field: string; errors: string[] }[]).map((f) => [f.field, f.errors]));
  }
  assert.fail('accepted');
}

describe('usage reports: the parameters', () => {
  it('defaults to the last 30 UTC days ending now, grouped by day, with the default group cap', () => {
    const range = parseUsageReport({}, NOW);
    assert.deepEqual(range, { from: new Date('2026-11-06T00:00:00Z'), to: NOW, groupBy: 'day', limit: USAGE_REPORT_DEFAULT_GROUPS });
  });

  it('takes ISO dates and date-times in UTC: a date `to` includes its whole day, a date-time `to` is exclusive', () => {
    assert.deepEqual(parseUsageReport({ from: '2026-12-01', to: '2026-12-01', group_by: 'agent' }, NOW), {
      from: new Date('2026-12-01T00:00:00Z'),
      to: new Date('2026-12-02T00:00:00Z'),
      groupBy: 'agent',
      limit: USAGE_REPORT_DEFAULT_GROUPS,
    });
    const exact = parseUsageReport({ from: '2026-12-01T08:00', to: '2026-12-01T11:30:00+02:00', limit: 5 }, NOW);
    assert.deepEqual([exact.from.toISOString(), exact.to.toISOString(), exact.limit], ['2026-12-01T08:00:00.000Z', '2026-12-01T09:30:00.000Z', 5]);
  });

  it('a `to` alone ends the default 30 days at that day', () => {
    const range = parseUsageReport({ to: '2026-03-31' }, NOW);
    assert.deepEqual([range.from.toISOString(), range.to.toISOString()], ['2026-03-02T00:00:00.000Z', '2026-04-01T00:00:00.000Z']);
  });

  it('accepts every group key and refuses any other', () => {
    for (const key of ['day', 'agent', 'model', 'session', 'project', 'app', 'end_user']) assert.equal(parseUsageReport({ group_by: key }, NOW).groupBy, key);
    assert.match(refused({ group_by: 'user' }).group_by![0]!, /must be one of day, agent, model, session, project, app, end_user/);
    assert.ok(refused({ group_by: 'DAY' }).group_by);
  });

  it('refuses malformed and impossible dates, naming each field', () => {
    for (const bad of ['yesterday', '2026-13-01', '2026-02-30', '2026-12-01T25:00Z', '2026-12-01T10:61', '12/01/2026', '2026-12-01 10:00', '1969-12-31', '']) {
      assert.ok(refused({ from: bad }).from, `from=${bad}`);
    }
    assert.deepEqual(Object.keys(refused({ from: 'x', to: 'y', group_by: 'z' })).sort(), ['from', 'group_by', 'to']);
  });

  it('refuses `from` not before `to`', () => {
    assert.deepEqual(refused({ from: '2026-12-02', to: '2026-12-01' }), { from: ['from must be before to'] });
    assert.deepEqual(refused({ from: '2026-12-01T10:00Z', to: '2026-12-01T10:00Z' }), { from: ['from must be before to'] });
    assert.ok(refused({ from: '2026-12-06' }).from, 'a from after now (the default to)');
  });

  it(`bounds the range at ${USAGE_REPORT_MAX_DAYS} days and the groups at 1–1000`, () => {
    assert.equal(parseUsageReport({ from: '2024-01-01', to: '2024-12-31' }, NOW).to.toISOString(), '2025-01-01T00:00:00.000Z', 'a leap year fits');
    assert.match(refused({ from: '2024-01-01', to: '2025-01-01' }).to![0]!, /at most 366 days/);
    assert.ok(refused({ limit: 0 }).limit);
    assert.ok(refused({ limit: 1001 }).limit);
    assert.ok(refused({ limit: 1.5 }).limit);
    assert.equal(parseUsageReport({ limit: 1000 }, NOW).limit, 1000);
  });

  it('parses an instant without a database', () => {
    assert.deepEqual(parseInstant('2026-12-05'), { at: new Date('2026-12-05T00:00:00Z'), dateOnly: true });
    assert.deepEqual(parseInstant('2026-12-05T01:02:03.456Z'), { at: new Date('2026-12-05T01:02:03.456Z'), dateOnly: false });
    assert.ok('error' in parseInstant('2026-12-05T01'));
  });
});

describe('usage reports: rows and scopes', () => {
  const db = { key: 'gpt-x', input_tokens: '9007199254740', output_tokens: '20', cached_tokens: '3', reasoning_tokens: '0', model_calls: '2', tool_calls: '5', cost_microusd: '1234' };

  it('maps sums (bigint text) to numbers, keeps a null cost null and adds the app only to end-user groups', () => {
    assert.deepEqual(toUsageReportRow('model', db), { key: 'gpt-x', input_tokens: 9007199254740, output_tokens: 20, cached_tokens: 3, reasoning_tokens: 0, model_calls: 2, tool_calls: 5, cost_microusd: 1234 });
    assert.equal(toUsageReportRow('model', { ...db, cost_microusd: null }).cost_microusd, null);
    assert.equal(toUsageReportRow('project', { ...db, key: null }).key, null);
    assert.deepEqual(toUsageReportRow('end_user', { ...db, key: 'alice', app_id: 'shop' }).app_id, 'shop');
    assert.equal('app_id' in toUsageReportRow('agent', { ...db, app_id: 'shop' }), false);
  });

  const principal = (over: Partial<Principal>): Principal => ({
    userId: 'u-1',
    actorId: 'u-1',
    keyId: 'k-1',
    access: 'full',
    appId: null,
    endUser: null,
    role: null,
    isAdmin: false,
    limits: { perMinute: null, streams: null },
    ...over,
  });

  it('a product user reads their account; an app key its app, or the end user it names', () => {
    assert.deepEqual(ownUsageScope(principal({})), { accountId: 'u-1' });
    assert.deepEqual(ownUsageScope(principal({ userId: 'end-9', actorId: 'u-1', appId: 'shop', endUser: '' })), { accountId: 'u-1', appId: 'shop' });
    assert.deepEqual(ownUsageScope(principal({ userId: 'end-7', actorId: 'u-1', appId: 'shop', endUser: 'alice' })), { accountId: 'u-1', appId: 'shop', endUserId: 'alice' });
  });
});
