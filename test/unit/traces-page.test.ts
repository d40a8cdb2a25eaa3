import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { cutTracePage, type OtlpSpan, SessionSpansRepository, SPAN_DELETE_BATCH, SPAN_DELETE_BATCHES_PER_TICK, SPAN_RETENTION_OFF_PAUSE_MS, SpanRetention, type SpanRowOfPage, type TracedTurn } from '#libs/traces';
import { FakeDataSource, quietNestLogger } from './support/new-test-service.js';

// The traces route's page (libs/traces/src/trace-page.ts): which traces a page holds under the
// response bound, when a single trace is cut, what has_more says; the cursor of its turn read; the
// pace of retention. No database: the statements are answered by a fake data source.

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const RESOURCE = { attributes: [{ key: 'service.name', value: { stringValue: 'yuxi-worker' } }] };
const SCOPE = { name: 'yuxi-agents-sessions' };

const turn = (n: number): TracedTurn => ({ id: `0190a1b2-c3d4-7e5f-8a9b-00000000000${n}`, traceId: String(n).repeat(32), createdAt: new Date(1_767_323_045_000 + n * 1000) });

/** The spans of the `ord`-th turn: `sizes` are the spans' padding lengths; bytes as the database measures them (never shorter than the JSON). */
function spansOf(ord: number, sizes: number[], total = sizes.length): SpanRowOfPage[] {
  return sizes.map((size, i) => {
    const span: OtlpSpan = { traceId: String(ord).repeat(32), spanId: String(i).padStart(16, '0'), name: `s${i}`, startTimeUnixNano: String(i), attributes: [{ key: 'pad', value: { stringValue: 'x'.repeat(size) } }] };
    return { ord, span, resource: RESOURCE, scope: SCOPE, bytes: Buffer.byteLength(JSON.stringify(span)) + 8, total };
  });
}

const names = (page: ReturnType<typeof cutTracePage>) => page.data.map((entry) => [entry.id, (entry.otlp.resourceSpans as { scopeSpans: { spans: OtlpSpan[] }[] }[]).flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((x) => x.name))), entry.yuxi.truncated]);
const responseBytes = (page: ReturnType<typeof cutTracePage>) => Buffer.byteLength(JSON.stringify({ object: 'list', data: page.data, first_id: page.data[0]?.id ?? null, last_id: page.data.at(-1)?.id ?? null, has_more: page.hasMore }));

describe('a page of traces under the response bound (cutTracePage)', () => {
  it('holds every trace that fits, in page order, as OTLP JSON entries of the turns; has_more is the turn read\'s', () => {
    const turns = [turn(1), turn(2)];
    const page = cutTracePage(SESSION, turns, [...spansOf(0, [10, 10]), ...spansOf(1, [10])], true);
    assert.deepEqual(names(page), [
      [turns[0]!.id, ['s0', 's1'], false],
      [turns[1]!.id, ['s0'], false],
    ]);
    assert.equal(page.hasMore, true);
    const [first] = page.data;
    assert.deepEqual([first!.object, first!.session_id, first!.created_at], ['agent.session.trace', SESSION, 1_767_323_046]);
    assert.deepEqual((first!.otlp.resourceSpans as { resource: unknown; scopeSpans: { scope: unknown }[] }[]).map((r) => [r.resource, r.scopeSpans.map((s) => s.scope)]), [[RESOURCE, [SCOPE]]]);
    assert.equal(cutTracePage(SESSION, turns, [...spansOf(0, [10]), ...spansOf(1, [10])], false).hasMore, false);
  });

  it('stops before the trace that would pass the bound: has_more true, the next page starts with it; the response stays under the bound', () => {
    const turns = [turn(1), turn(2), turn(3)];
    const page = cutTracePage(SESSION, turns, [...spansOf(0, [1000]), ...spansOf(1, [1000, 1000]), ...spansOf(2, [10])], false, 3000);
    assert.deepEqual(names(page), [[turns[0]!.id, ['s0'], false]]);
    assert.equal(page.hasMore, true);
    assert.ok(responseBytes(page) <= 3000);
  });

  it('cuts a first trace larger than the bound to its earliest spans that fit, marked yuxi.truncated, and ends the page', () => {
    const turns = [turn(1), turn(2)];
    const rows = [...spansOf(0, [1000, 1000, 1000, 1000]), ...spansOf(1, [10])];
    const page = cutTracePage(SESSION, turns, rows, false, 3500);
    assert.deepEqual(names(page), [[turns[0]!.id, ['s0', 's1'], true]]);
    assert.equal(page.hasMore, true, 'a turn follows');
    assert.ok(responseBytes(page) <= 3500);
    const last = cutTracePage(SESSION, [turns[0]!], rows.filter((row) => row.ord === 0), false, 3500);
    assert.deepEqual([last.data.length, last.data[0]!.yuxi.truncated, last.hasMore], [1, true, false], 'the last turn: nothing follows');
  });

  it('treats a trace whose read stopped at the bound as larger than the page, and ends the page before the turns it did not reach', () => {
    const turns = [turn(1), turn(2), turn(3)];
    // The read stopped within the second trace (3 of its 5 spans read): neither it nor the third is known whole.
    const rows = [...spansOf(0, [100]), ...spansOf(1, [100, 100, 100], 5)];
    const bound = rows.reduce((sum, row) => sum + row.bytes, 0);
    const page = cutTracePage(SESSION, turns, rows, false, bound);
    assert.deepEqual(names(page), [[turns[0]!.id, ['s0'], false]]);
    assert.equal(page.hasMore, true);
    // Alone on its page, the second trace is cut to what fits.
    const alone = cutTracePage(SESSION, [turns[1]!, turns[2]!], spansOf(0, [100, 100, 100], 5), false, 800);
    assert.deepEqual(alone.data.map((entry) => entry.yuxi.truncated), [true]);
    assert.equal(alone.hasMore, true);
  });

  it('skips a turn whose spans are gone (retention ran between the reads)', () => {
    const turns = [turn(1), turn(2), turn(3)];
    const page = cutTracePage(SESSION, turns, [...spansOf(0, [10]), ...spansOf(2, [10])], false);
    assert.deepEqual(page.data.map((entry) => entry.id), [turns[0]!.id, turns[2]!.id]);
    assert.equal(page.hasMore, false);
  });
});

describe('the traces route\'s cursor (SessionSpansRepository.tracedTurns)', () => {
  const TURN = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

  function repository(answers: (sql: string, parameters: unknown[]) => unknown) {
    const dataSource = new FakeDataSource();
    dataSource.answer = (sql, parameters) => answers(String(sql), parameters ?? []);
    return { repo: new SessionSpansRepository(dataSource as unknown as DataSource), dataSource };
  }

  it('rejects an `after` that is not a turn of the session (400 invalid_cursor), and one that is not even a UUID without a statement', async () => {
    const { repo, dataSource } = repository(() => []);
    await assert.rejects(repo.tracedTurns(SESSION, { after: 'nope', limit: 20, order: 'desc' }), (error: unknown) => error instanceof DomainError && error.code === 'invalid_cursor');
    assert.equal(dataSource.query.mock.callCount(), 0);
    await assert.rejects(repo.tracedTurns(SESSION, { after: TURN, limit: 20, order: 'desc' }), (error: unknown) => error instanceof DomainError && error.code === 'invalid_cursor');
    assert.deepEqual(dataSource.query.mock.calls[0]!.arguments[1], [TURN, SESSION]);
  });

  it('pages after the anchor\'s position in the order asked, one row more than the limit to learn has_more', async () => {
    const at = new Date();
    const rows = [1, 2, 3].map((n) => ({ id: `t${n}`, trace_id: String(n).repeat(32), created_at: at }));
    for (const order of ['desc', 'asc'] as const) {
      const { repo, dataSource } = repository((sql) => (sql.startsWith('SELECT seq') ? [{ seq: 7 }] : rows));
      const page = await repo.tracedTurns(SESSION, { after: TURN, limit: 2, order });
      assert.deepEqual(page, { rows: rows.slice(0, 2).map((row) => ({ id: row.id, traceId: row.trace_id, createdAt: at })), hasMore: true });
      const [sql, parameters] = dataSource.query.mock.calls[1]!.arguments as [unknown, unknown[]];
      assert.match(String(sql), order === 'desc' ? /t\.seq < \$3[\s\S]*ORDER BY t\.seq DESC/ : /t\.seq > \$3[\s\S]*ORDER BY t\.seq ASC/);
      assert.deepEqual(parameters, [SESSION, 3, 7]);
    }
    const { repo, dataSource } = repository(() => rows.slice(0, 1));
    assert.equal((await repo.tracedTurns(SESSION, { limit: 2, order: 'desc' })).hasMore, false);
    assert.deepEqual(dataSource.query.mock.calls[0]!.arguments[1], [SESSION, 3], 'no cursor: no anchor read');
  });
});

describe('span retention (SpanRetention)', () => {
  quietNestLogger();
  function retention(batches: number[]) {
    const deletes: unknown[][] = [];
    const spans = { deleteOlderThan: async (...args: unknown[]) => (deletes.push(args), batches.shift() ?? 0) };
    const sut = new SpanRetention(spans as unknown as SessionSpansRepository, { traceRetentionS: 3600 } as AppConfig);
    return { sut, deletes };
  }

  it('deletes in batches until one comes back short, then rests (an hour while tracing is off)', async () => {
    const { sut, deletes } = retention([SPAN_DELETE_BATCH, 3]);
    assert.equal(await sut.run(1_000), SPAN_DELETE_BATCH + 3);
    assert.deepEqual(deletes, [[3600, SPAN_DELETE_BATCH], [3600, SPAN_DELETE_BATCH]]);
    assert.equal(await sut.run(1_000 + SPAN_RETENTION_OFF_PAUSE_MS - 1), 0);
    assert.equal(deletes.length, 2, 'not due: no statement');
    await sut.run(1_000 + SPAN_RETENTION_OFF_PAUSE_MS);
    assert.equal(deletes.length, 3);
  });

  it('runs at most a few batches a tick, and goes on at the next tick while batches come back full', async () => {
    const { sut, deletes } = retention(Array.from({ length: 20 }, () => SPAN_DELETE_BATCH));
    assert.equal(await sut.run(1_000), SPAN_DELETE_BATCH * SPAN_DELETE_BATCHES_PER_TICK);
    await sut.run(1_001);
    assert.equal(deletes.length, 2 * SPAN_DELETE_BATCHES_PER_TICK);
  });

  it('a failing delete is logged, never thrown', async () => {
    const sut = new SpanRetention({ deleteOlderThan: async () => Promise.reject(new Error('db down')) } as unknown as SessionSpansRepository, { traceRetentionS: 60 } as AppConfig);
    assert.equal(await sut.run(1_000), 0);
  });
});
