import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentDefinition, parseTtl, resolveSessionTtl, TTL_MAX_S, TTL_MIN_S, ttlExpiresAt, ttlView } from '#libs/agents';
import { toSessionDto, ttlFirstCheck } from '#libs/engine';
import { aSession } from './support/aggregate-fixtures.js';

// Session TTL (issue 43): the bounds of a `ttl`, the effective TTL a session goes by (its own,
// its project's, its agent's), and `yuxi.expires_at`.

describe('parseTtl', () => {
  it('takes integers within the bounds; absent, null and {} are no TTL', () => {
    assert.deepEqual(parseTtl({ archive_after_idle_s: 3600, delete_after_idle_s: 7200 }, 'ttl'), { ttl: { archive_after_idle_s: 3600, delete_after_idle_s: 7200 }, errors: [] });
    assert.deepEqual(parseTtl({ delete_after_idle_s: TTL_MIN_S }, 'ttl').ttl, { delete_after_idle_s: TTL_MIN_S });
    assert.deepEqual(parseTtl({ archive_after_idle_s: TTL_MAX_S }, 'ttl').ttl, { archive_after_idle_s: TTL_MAX_S });
    for (const none of [undefined, null, {}]) assert.deepEqual(parseTtl(none, 'ttl'), { ttl: null, errors: [] });
  });

  it('names the field of each problem', () => {
    const fields = (raw: unknown) => parseTtl(raw, 'yuxi.ttl').errors.map((error) => error.field);
    assert.deepEqual(fields({ archive_after_idle_s: TTL_MIN_S - 1 }), ['yuxi.ttl.archive_after_idle_s']);
    assert.deepEqual(fields({ delete_after_idle_s: TTL_MAX_S + 1 }), ['yuxi.ttl.delete_after_idle_s']);
    assert.deepEqual(fields({ delete_after_idle_s: 3600.5 }), ['yuxi.ttl.delete_after_idle_s']);
    assert.deepEqual(fields({ archive_after_idle_s: '3600' }), ['yuxi.ttl.archive_after_idle_s']);
    assert.deepEqual(fields({ purge_after_idle_s: 3600 }), ['yuxi.ttl.purge_after_idle_s']);
    assert.deepEqual(fields({ archive_after_idle_s: 7200, delete_after_idle_s: 3600 }), ['yuxi.ttl.delete_after_idle_s'], 'delete before archive');
    assert.deepEqual(fields('1h'), ['yuxi.ttl']);
    assert.deepEqual(fields([]), ['yuxi.ttl']);
  });

  it('is part of an agent definition', () => {
    assert.deepEqual(parseAgentDefinition({ name: 'a', ttl: { archive_after_idle_s: 600 } }).definition?.ttl, { archive_after_idle_s: 600 });
    assert.equal(parseAgentDefinition({ name: 'a' }).definition?.ttl, null);
    assert.deepEqual(
      parseAgentDefinition({ name: 'a', ttl: { delete_after_idle_s: 1 } }).errors.map((error) => error.field),
      ['ttl.delete_after_idle_s'],
    );
  });
});

describe('resolveSessionTtl', () => {
  const resolve = (sources: Parameters<typeof resolveSessionTtl>[0]) => resolveSessionTtl(sources, 'yuxi.ttl');

  it('nothing set: no TTL', () => {
    assert.deepEqual(resolve({}), { ttl: { archiveAfterS: null, deleteAfterS: null }, errors: [] });
    assert.deepEqual(resolve({ own: null, project: null, agent: null }).ttl, { archiveAfterS: null, deleteAfterS: null });
  });

  it('each field: the shortest of the session\'s own, its project\'s and its agent\'s', () => {
    assert.deepEqual(resolve({ agent: { archive_after_idle_s: 3600, delete_after_idle_s: 7200 } }).ttl, { archiveAfterS: 3600, deleteAfterS: 7200 });
    assert.deepEqual(resolve({ project: { delete_after_idle_s: 5000 }, agent: { archive_after_idle_s: 3600, delete_after_idle_s: 7200 } }).ttl, { archiveAfterS: 3600, deleteAfterS: 5000 });
    assert.deepEqual(resolve({ own: { archive_after_idle_s: 600 }, agent: { archive_after_idle_s: 3600, delete_after_idle_s: 7200 } }).ttl, { archiveAfterS: 600, deleteAfterS: 7200 });
    assert.deepEqual(resolve({ own: { delete_after_idle_s: 900 }, project: { archive_after_idle_s: 1800 } }).ttl, { archiveAfterS: null, deleteAfterS: 900 }, 'an archive after the delete is dropped');
    assert.deepEqual(resolve({ own: { archive_after_idle_s: 900, delete_after_idle_s: 900 } }).ttl, { archiveAfterS: null, deleteAfterS: 900 }, 'an archive at the delete too');
    assert.deepEqual(resolve({ own: { delete_after_idle_s: 10_000 } }).ttl, { archiveAfterS: null, deleteAfterS: 10_000 }, 'a field none of the others set: the session\'s own');
  });

  it('a session may not lengthen what its project or agent sets: 422 naming the field and whose bound it passes', () => {
    const longer = resolve({ own: { delete_after_idle_s: 9000 }, agent: { delete_after_idle_s: 7200 } });
    assert.deepEqual(longer.errors, [{ field: 'yuxi.ttl.delete_after_idle_s', errors: ['must be at most 7200, the agent\'s delete_after_idle_s'] }]);
    const both = resolve({ own: { archive_after_idle_s: 4000 }, project: { archive_after_idle_s: 3000 }, agent: { archive_after_idle_s: 3500 } });
    assert.deepEqual(
      both.errors.map((error) => error.errors[0]),
      ['must be at most 3000, the project\'s archive_after_idle_s', 'must be at most 3500, the agent\'s archive_after_idle_s'],
    );
    assert.deepEqual(resolve({ own: { archive_after_idle_s: 7200 }, agent: { archive_after_idle_s: 7200 } }).errors, [], 'equal is allowed');
  });
});

describe('yuxi.expires_at', () => {
  const lastActive = new Date('2026-03-01T00:00:00Z');
  const at = lastActive.getTime() / 1000;

  it('the deletion where a delete TTL is set, else the archive while not archived, else null', () => {
    assert.equal(ttlExpiresAt({ archiveAfterS: 3600, deleteAfterS: 7200 }, lastActive, false), at + 7200);
    assert.equal(ttlExpiresAt({ archiveAfterS: 3600, deleteAfterS: 7200 }, lastActive, true), at + 7200);
    assert.equal(ttlExpiresAt({ archiveAfterS: 3600, deleteAfterS: null }, lastActive, false), at + 3600);
    assert.equal(ttlExpiresAt({ archiveAfterS: 3600, deleteAfterS: null }, lastActive, true), null);
    assert.equal(ttlExpiresAt({ archiveAfterS: null, deleteAfterS: null }, lastActive, false), null);
  });

  it('the session resource shows its TTL and when it expires; without one, both null', () => {
    const view = toSessionDto(aSession({ ttlArchiveAfterS: 3600, ttlDeleteAfterS: 7200, lastActiveAt: lastActive }));
    assert.deepEqual(view.yuxi.ttl, { archive_after_idle_s: 3600, delete_after_idle_s: 7200 });
    assert.equal(view.yuxi.expires_at, at + 7200);
    const none = toSessionDto(aSession({ lastActiveAt: lastActive }));
    assert.equal(none.yuxi.ttl, null);
    assert.equal(none.yuxi.expires_at, null);
    assert.deepEqual(ttlView({ archiveAfterS: null, deleteAfterS: 60 }), { delete_after_idle_s: 60 });
  });
});

describe('the TTL sweep\'s first look (ttl_check_at)', () => {
  const lastActive = new Date('2026-03-01T00:00:00Z');

  it('the shortest TTL after last_active_at (never later than either can act); null without a TTL', () => {
    assert.equal(ttlFirstCheck(lastActive, { archiveAfterS: 3600, deleteAfterS: 7200 })?.toISOString(), '2026-03-01T01:00:00.000Z');
    assert.equal(ttlFirstCheck(lastActive, { archiveAfterS: null, deleteAfterS: 120 })?.toISOString(), '2026-03-01T00:02:00.000Z');
    assert.equal(ttlFirstCheck(lastActive, { archiveAfterS: null, deleteAfterS: null }), null);
    assert.equal(ttlFirstCheck(lastActive, undefined), null);
  });
});
