import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DataSource, Repository } from 'typeorm';
import type { AppConfig } from '#libs/config';
import type { Page, PageQuery } from '#libs/database';
import { type TurnEntity, TurnsRepository } from '#libs/engine';
import { DomainError } from '#libs/errors';
import { MAX_TRACED_TURNS_SCANNED, turnsWithSpans } from '#libs/protocol';
import { cutTracePage, type OtlpSpan, SessionSpansRepository, SPAN_DELETE_BATCH, SPAN_DELETE_BATCHES_PER_TICK, SPAN_RETENTION_OFF_PAUSE_MS, SpanRetention, type SpanRowOfPage, type TracedTurn } from '#libs/traces';
import { FakeDataSource, quietNestLogger } from './support/new-test-service.js';

// The traces route's page (libs/traces/src/trace-page.ts): which traces a page holds under the
// response bound, when a single trace is cut, what has_more says; the engine's page of traced turns
// and its cursor; how the use case skips turns without spans; the span reads; the pace of retention. No database: the statements are answered by a fake data source.

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

  it('serves a trace that retention removed in part with the spans that remain, not marked truncated', () => {
    // The entry's count is of what is stored now: the root retention deleted is simply not there, its child stays.
    const [root, child] = spansOf(0, [10, 10]);
    child!.span.parentSpanId = root!.span.spanId;
    const page = cutTracePage(SESSION, [turn(1)], [{ ...child!, total: 1 }], false);
    assert.deepEqual(names(page), [[turn(1).id, ['s1'], false]]);
  });

  it('skips a turn whose spans are gone (retention ran between the reads)', () => {
    const turns = [turn(1), turn(2), turn(3)];
    const page = cutTracePage(SESSION, turns, [...spansOf(0, [10]), ...spansOf(2, [10])], false);
    assert.deepEqual(page.data.map((entry) => entry.id), [turns[0]!.id, turns[2]!.id]);
    assert.equal(page.hasMore, false);
  });
});

describe('the traces route\'s cursor (TurnsRepository.tracedTurns, the engine\'s page of traced turns)', () => {
  const TURN = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

  function repository(answers: (sql: string, parameters: unknown[]) => unknown) {
    const dataSource = new FakeDataSource();
    dataSource.answer = (sql, parameters) => answers(String(sql), parameters ?? []);
    return { repo: new TurnsRepository({ manager: { query: dataSource.query } } as unknown as Repository<TurnEntity>), dataSource };
  }

  it('rejects an `after` that is not a turn of the session (400 invalid_cursor), and one that is not even a UUID without a statement', async () => {
    const { repo, dataSource } = repository(() => []);
    await assert.rejects(repo.tracedTurns(SESSION, { after: 'nope', limit: 20, order: 'desc' }), (error: unknown) => error instanceof DomainError && error.code === 'invalid_cursor');
    assert.equal(dataSource.query.mock.callCount(), 0);
    await assert.rejects(repo.tracedTurns(SESSION, { after: TURN, limit: 20, order: 'desc' }), (error: unknown) => error instanceof DomainError && error.code === 'invalid_cursor');
    assert.deepEqual(dataSource.query.mock.calls[0]!.arguments[1], [TURN, SESSION]);
  });

  it('pages the session\'s turns with a trace id after the anchor\'s position in the order asked, one row more than the limit to learn has_more; never reads the span store', async () => {
    const at = new Date();
    const rows = [1, 2, 3].map((n) => ({ id: `t${n}`, trace_id: String(n).repeat(32), created_at: at }));
    for (const order of ['desc', 'asc'] as const) {
      const { repo, dataSource } = repository((sql) => (sql.startsWith('SELECT seq') ? [{ seq: 7 }] : rows));
      const page = await repo.tracedTurns(SESSION, { after: TURN, limit: 2, order });
      assert.deepEqual(page, { rows: rows.slice(0, 2).map((row) => ({ id: row.id, traceId: row.trace_id, createdAt: at })), hasMore: true });
      const [sql, parameters] = dataSource.query.mock.calls[1]!.arguments as [unknown, unknown[]];
      assert.match(String(sql), order === 'desc' ? /trace_id IS NOT NULL AND seq < \$3 ORDER BY seq DESC/ : /trace_id IS NOT NULL AND seq > \$3 ORDER BY seq ASC/);
      assert.doesNotMatch(String(sql), /session_spans/);
      assert.deepEqual(parameters, [SESSION, 3, 7]);
    }
    const { repo, dataSource } = repository(() => rows.slice(0, 1));
    assert.equal((await repo.tracedTurns(SESSION, { limit: 2, order: 'desc' })).hasMore, false);
    assert.deepEqual(dataSource.query.mock.calls[0]!.arguments[1], [SESSION, 3], 'no cursor: no anchor read');
  });
});

describe('the turns a page of traces shows (turnsWithSpans: the engine\'s traced turns with libs/traces\' stored spans)', () => {
  const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ id: `t${from + i}` }));

  /** A session of `count` traced turns (t0 … in page order) of which `hasSpans` have stored spans; records each read's page. */
  function session(count: number, hasSpans: (n: number) => boolean) {
    const reads: PageQuery[] = [];
    const checked: string[] = [];
    const read = async (page: PageQuery): Promise<Page<{ id: string }>> => {
      reads.push(page);
      const from = page.after === undefined ? 0 : Number(page.after.slice(1)) + 1;
      const rows = ids(from, Math.min(count, from + page.limit + 1));
      return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
    };
    const withSpans = async (turns: { id: string }[]) => (checked.push(...turns.map((turn) => turn.id)), turns.filter((turn) => hasSpans(Number(turn.id.slice(1)))));
    return { read, withSpans, reads, checked };
  }

  it('every turn with spans: one read of limit + 1 turns says has_more', async () => {
    const { read, withSpans, reads } = session(10, () => true);
    assert.deepEqual(await turnsWithSpans(read, withSpans, { limit: 3, order: 'desc' }), { turns: ids(0, 3), more: true });
    assert.deepEqual(reads, [{ after: undefined, limit: 4, order: 'desc' }]);
    const last = session(3, () => true);
    assert.deepEqual(await turnsWithSpans(last.read, last.withSpans, { after: undefined, limit: 3, order: 'asc' }), { turns: ids(0, 3), more: false });
  });

  it('skips turns without spans and reads on (after the last turn read) until the page is full; each turn is checked once', async () => {
    const { read, withSpans, reads, checked } = session(300, (n) => n % 50 === 0);
    const page = await turnsWithSpans(read, withSpans, { after: undefined, limit: 3, order: 'desc' });
    assert.deepEqual(page, { turns: [{ id: 't0' }, { id: 't50' }, { id: 't100' }], more: true });
    assert.deepEqual(reads.map((r) => [r.after, r.limit]), [[undefined, 4], ['t3', 100], ['t103', 100]]);
    assert.equal(new Set(checked).size, checked.length);
    const end = session(120, (n) => n === 0 || n === 119);
    assert.deepEqual(await turnsWithSpans(end.read, end.withSpans, { limit: 5, order: 'desc' }), { turns: [{ id: 't0' }, { id: 't119' }], more: false }, 'the session ends: no more');
  });

  it('looks at MAX_TRACED_TURNS_SCANNED turns at most: the page ends short (even empty) with more true', async () => {
    const { read, withSpans, checked } = session(5000, (n) => n === 0);
    assert.deepEqual(await turnsWithSpans(read, withSpans, { limit: 20, order: 'desc' }), { turns: [{ id: 't0' }], more: true });
    assert.equal(checked.length, MAX_TRACED_TURNS_SCANNED);
    const none = session(5000, () => false);
    assert.deepEqual(await turnsWithSpans(none.read, none.withSpans, { after: 't10', limit: 20, order: 'asc' }), { turns: [], more: true });
  });
});

describe('the span store\'s reads of a page (SessionSpansRepository)', () => {
  function repository(rows: unknown[]) {
    const dataSource = new FakeDataSource();
    dataSource.answer = () => rows;
    return { repo: new SessionSpansRepository(dataSource as unknown as DataSource), dataSource };
  }
  const turns = [turn(1), turn(2)];

  it('reads a turn\'s entry as its own spans of the trace and the trace\'s spans of no turn, never the whole trace per turn', async () => {
    const span = spansOf(0, [1])[0]!;
    const { repo, dataSource } = repository([{ ord: '2', span: span.span, resource: RESOURCE, scope: SCOPE, bytes: '120', total: '1' }]);
    assert.deepEqual(await repo.spansOfTurns(SESSION, turns, 5000), [{ ord: 1, span: span.span, resource: RESOURCE, scope: SCOPE, bytes: 120, total: 1 }]);
    const [sql, parameters] = dataSource.query.mock.calls[0]!.arguments as [unknown, unknown[]];
    assert.match(String(sql), /t\.trace_id = o\.trace_id AND t\.turn_id = o\.turn_id\s+UNION ALL[\s\S]*n\.trace_id = o\.trace_id AND n\.turn_id IS NULL/);
    assert.deepEqual(parameters, [SESSION, turns.map((t) => t.id), turns.map((t) => t.traceId), 5000]);
    assert.deepEqual(await repository([]).repo.spansOfTurns(SESSION, [], 5000), []);
  });

  it('says which turns have an entry, by position; no turns, no statement', async () => {
    const { repo, dataSource } = repository([{ ord: '2' }]);
    assert.deepEqual([...(await repo.withSpans(SESSION, turns))], [1]);
    const [sql, parameters] = dataSource.query.mock.calls[0]!.arguments as [unknown, unknown[]];
    assert.match(String(sql), /s\.turn_id = o\.turn_id\)\s+OR EXISTS[\s\S]*s\.turn_id IS NULL/);
    assert.deepEqual(parameters, [SESSION, turns.map((t) => t.id), turns.map((t) => t.traceId)]);
    const empty = repository([]);
    assert.equal((await empty.repo.withSpans(SESSION, [])).size, 0);
    assert.equal(empty.dataSource.query.mock.callCount(), 0);
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
