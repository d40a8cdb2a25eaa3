import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DataSource, Repository } from 'typeorm';
import type { AppConfig } from '#libs/config';
import type { Page } from '#libs/database';
import { MAX_TRACED_TURN_INPUTS, TRACED_TURN_RETENTION_MARGIN_S, type TurnEntity, TurnsRepository } from '#libs/engine';
import { DomainError } from '#libs/errors';
import { MAX_TRACED_TURNS_SCANNED, MAX_TRACED_TURNS_SCANNED_EMPTY, type ScanChunk, turnsWithSpans } from '#libs/protocol';
import { cutTracePage, type OtlpSpan, SessionSpansRepository, SPAN_DELETE_BATCH, SPAN_DELETE_BATCHES_PER_TICK, SPAN_RETENTION_OFF_PAUSE_MS, SpanRetention, type SpanRowOfPage, type TracedTurn } from '#libs/traces';
import { FakeDataSource, quietNestLogger } from './support/new-test-service.js';

// The traces route's page (libs/traces/src/trace-page.ts): which traces a page holds under the
// response bound, when a single trace is cut, what has_more says; the engine's page of traced turns
// and its cursor; how the use case skips turns without spans; the span reads; the pace of retention. No database: the statements are answered by a fake data source.

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const RESOURCE = { attributes: [{ key: 'service.name', value: { stringValue: 'yuxi-worker' } }] };
const SCOPE = { name: 'yuxi-agents-sessions' };

const turn = (n: number, inputIds: string[] = []): TracedTurn => ({ id: `0190a1b2-c3d4-7e5f-8a9b-00000000000${n}`, traceId: String(n).repeat(32), createdAt: new Date(1_767_323_045_000 + n * 1000), inputIds });

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

describe('the traces route\'s cursor (TurnsRepository.tracedTurnAnchor / tracedTurns, the engine\'s chunks of traced turns)', () => {
  const TURN = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
  const INPUT = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c';

  function repository(answers: (sql: string, parameters: unknown[]) => unknown) {
    const dataSource = new FakeDataSource();
    dataSource.answer = (sql, parameters) => answers(String(sql), parameters ?? []);
    return { repo: new TurnsRepository({ manager: { query: dataSource.query } } as unknown as Repository<TurnEntity>), dataSource };
  }

  it('reads the anchor of an `after` (the first chunk\'s): not a turn of the session is 400 invalid_cursor, not even a UUID is refused without a statement', async () => {
    const chunk = (after: string) => ({ afterSeq: null, after, limit: 20, order: 'desc' as const, retentionS: 60 });
    const { repo, dataSource } = repository(() => []);
    await assert.rejects(repo.tracedTurns(SESSION, chunk('nope')), (error: unknown) => error instanceof DomainError && error.code === 'invalid_cursor');
    assert.equal(dataSource.query.mock.callCount(), 0);
    await assert.rejects(repo.tracedTurns(SESSION, chunk(TURN)), (error: unknown) => error instanceof DomainError && error.code === 'invalid_cursor');
    assert.deepEqual(dataSource.query.mock.calls[0]!.arguments[1], [TURN, SESSION]);
    const found = repository((sql) => (sql.startsWith('SELECT seq') ? [{ seq: '7' }] : []));
    await found.repo.tracedTurns(SESSION, chunk(TURN));
    assert.deepEqual(found.dataSource.query.mock.calls[1]!.arguments[1], [SESSION, 21, 60 + TRACED_TURN_RETENTION_MARGIN_S, MAX_TRACED_TURN_INPUTS, 7], 'the turns after its seq');
  });

  it('reads the session\'s traced turns (the partial index) after the anchor\'s seq in the order asked, only those retention has not passed, with their inputs; one row more than the limit to learn has_more; never reads the span store', async () => {
    const at = new Date();
    const rows = [1, 2, 3].map((n) => ({ id: `t${n}`, trace_id: String(n).repeat(32), created_at: at, seq: String(10 - n), input_ids: [INPUT] }));
    for (const order of ['desc', 'asc'] as const) {
      const { repo, dataSource } = repository(() => rows);
      const page = await repo.tracedTurns(SESSION, { afterSeq: 7, limit: 2, order, retentionS: 3600 });
      assert.deepEqual(page, { rows: rows.slice(0, 2).map((row) => ({ id: row.id, traceId: row.trace_id, createdAt: at, seq: Number(row.seq), inputIds: [INPUT] })), hasMore: true });
      assert.equal(dataSource.query.mock.callCount(), 1, 'no anchor read: the seq is passed on');
      const [sql, parameters] = dataSource.query.mock.calls[0]!.arguments as [unknown, unknown[]];
      assert.match(String(sql), order === 'desc' ? /trace_id IS NOT NULL AND t\.seq < \$5[\s\S]*ORDER BY t\.seq DESC/ : /trace_id IS NOT NULL AND t\.seq > \$5[\s\S]*ORDER BY t\.seq ASC/);
      assert.match(String(sql), /t\.completed_at IS NULL OR t\.completed_at >= now\(\) - make_interval\(secs => \$3::double precision\)/);
      assert.match(String(sql), /unnest\(r\.input_ids\)[\s\S]*WHERE r\.turn_id = t\.id ORDER BY r\.seq LIMIT \$4/);
      assert.doesNotMatch(String(sql), /session_spans/);
      assert.deepEqual(parameters, [SESSION, 3, 3600 + TRACED_TURN_RETENTION_MARGIN_S, MAX_TRACED_TURN_INPUTS, 7]);
    }
    const { repo, dataSource } = repository(() => rows.slice(0, 1));
    assert.equal((await repo.tracedTurns(SESSION, { afterSeq: null, limit: 2, order: 'desc', retentionS: 60 })).hasMore, false);
    assert.deepEqual(dataSource.query.mock.calls[0]!.arguments[1], [SESSION, 3, 60 + TRACED_TURN_RETENTION_MARGIN_S, MAX_TRACED_TURN_INPUTS], 'no cursor: no seq bound');
  });
});

describe('the turns a page of traces shows (turnsWithSpans: the engine\'s traced turns with libs/traces\' stored spans)', () => {
  const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ id: `t${from + i}`, seq: from + i }));
  const named = (...numbers: number[]) => numbers.map((n) => ({ id: `t${n}`, seq: n }));

  /** A session of `count` traced turns (t0 … in page order, seq = n) of which `hasSpans` have stored spans; records each read's chunk. */
  function session(count: number, hasSpans: (n: number) => boolean) {
    const reads: ScanChunk[] = [];
    const checked: string[] = [];
    const read = async (chunk: ScanChunk): Promise<Page<{ id: string; seq: number }>> => {
      reads.push(chunk);
      const from = chunk.afterSeq === null ? 0 : chunk.afterSeq + 1;
      const rows = ids(from, Math.min(count, from + chunk.limit + 1));
      return { rows: rows.slice(0, chunk.limit), hasMore: rows.length > chunk.limit };
    };
    const withSpans = async (turns: { id: string; seq: number }[]) => (checked.push(...turns.map((turn) => turn.id)), turns.filter((turn) => hasSpans(turn.seq)));
    return { read, withSpans, reads, checked };
  }

  it('every turn with spans: one read of limit + 1 turns says has_more', async () => {
    const { read, withSpans, reads } = session(10, () => true);
    assert.deepEqual(await turnsWithSpans(read, withSpans, { afterSeq: null, limit: 3 }), { turns: ids(0, 3), more: true, lastScanned: named(3)[0] });
    assert.deepEqual(reads, [{ afterSeq: null, limit: 4 }]);
    const last = session(3, () => true);
    assert.deepEqual((await turnsWithSpans(last.read, last.withSpans, { afterSeq: null, limit: 3 })).more, false);
  });

  it('skips turns without spans and reads on (after the seq of the last turn read) until the page is full; each turn is checked once', async () => {
    const { read, withSpans, reads, checked } = session(300, (n) => n % 50 === 0);
    const page = await turnsWithSpans(read, withSpans, { afterSeq: null, limit: 3 });
    assert.deepEqual([page.turns, page.more], [named(0, 50, 100), true]);
    assert.deepEqual(reads.map((r) => [r.afterSeq, r.limit]), [[null, 4], [3, 100], [103, 100]]);
    assert.equal(new Set(checked).size, checked.length);
    const end = session(120, (n) => n === 0 || n === 119);
    assert.deepEqual((await turnsWithSpans(end.read, end.withSpans, { afterSeq: null, limit: 5 })).turns, named(0, 119), 'the session ends');
    assert.equal((await turnsWithSpans(end.read, end.withSpans, { afterSeq: null, limit: 5 })).more, false, 'the session ends: no more');
  });

  it('looks at MAX_TRACED_TURNS_SCANNED turns at most once it found one: the page ends short with more true, and the next page goes on after its last entry', async () => {
    const { read, withSpans, checked } = session(5000, (n) => n === 0);
    const page = await turnsWithSpans(read, withSpans, { afterSeq: null, limit: 20 });
    assert.deepEqual([page.turns, page.more], [named(0), true]);
    assert.equal(checked.length, MAX_TRACED_TURNS_SCANNED);
  });

  it('never ends an empty page with more true while turns with spans follow within the bound: it reads on to MAX_TRACED_TURNS_SCANNED_EMPTY', async () => {
    // A stretch of 3,000 turns without spans (a span store that failed that long) before the ones with spans.
    const { read, withSpans, checked } = session(6000, (n) => n >= 3000);
    const page = await turnsWithSpans(read, withSpans, { afterSeq: 10, limit: 2 });
    assert.deepEqual([page.turns, page.more], [named(3000, 3001), true]);
    assert.equal(new Set(checked).size, checked.length, 'each turn checked once');
    assert.ok(checked.length < 4000);
  });

  it('past MAX_TRACED_TURNS_SCANNED_EMPTY with none found: empty, more true, and the last turn looked at (the cursor moves on)', async () => {
    const { read, withSpans, checked } = session(50_000, () => false);
    const page = await turnsWithSpans(read, withSpans, { afterSeq: null, limit: 20 });
    assert.deepEqual([page.turns, page.more, page.lastScanned], [[], true, named(MAX_TRACED_TURNS_SCANNED_EMPTY - 1)[0]]);
    assert.equal(checked.length, MAX_TRACED_TURNS_SCANNED_EMPTY);
    const none = session(30, () => false);
    assert.deepEqual((await turnsWithSpans(none.read, none.withSpans, { afterSeq: null, limit: 20 })).more, false, 'the session ends: no more, whatever was looked at');
  });
});

describe('the span store\'s reads of a page (SessionSpansRepository)', () => {
  const INPUT_A = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a01';
  const INPUT_B = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a02';
  function repository(rows: unknown[]) {
    const dataSource = new FakeDataSource();
    dataSource.answer = () => rows;
    return { repo: new SessionSpansRepository(dataSource as unknown as DataSource), dataSource };
  }
  const turns = [turn(1, [INPUT_A, INPUT_B]), turn(2)];
  const inputs = [`{${INPUT_A},${INPUT_B}}`, '{}'];

  it('reads a turn\'s entry as its own spans, its inputs\' accept_input spans and their parents: never the whole trace, nor all its spans of no turn, per turn', async () => {
    const span = spansOf(0, [1])[0]!;
    const { repo, dataSource } = repository([{ ord: '2', span: span.span, resource: RESOURCE, scope: SCOPE, bytes: '120', total: '1' }]);
    assert.deepEqual(await repo.spansOfTurns(SESSION, turns, 5000), [{ ord: 1, span: span.span, resource: RESOURCE, scope: SCOPE, bytes: 120, total: 1 }]);
    const [sql, parameters] = dataSource.query.mock.calls[0]!.arguments as [unknown, unknown[]];
    assert.match(String(sql), /t\.trace_id = o\.trace_id AND t\.turn_id = o\.turn_id/);
    assert.match(String(sql), /a\.trace_id = o\.trace_id AND a\.turn_id IS NULL AND a\.input_id = ANY \(o\.inputs::uuid\[\]\)/);
    assert.match(String(sql), /p\.span_id = a\.parent_span_id AND p\.turn_id IS NULL/);
    assert.equal(String(sql).match(/turn_id IS NULL/g)?.length, 2, 'spans of no turn only as an input\'s acceptance or its parent: no range of them all');
    assert.deepEqual(parameters, [SESSION, turns.map((t) => t.id), turns.map((t) => t.traceId), inputs, 5000]);
    assert.deepEqual(await repository([]).repo.spansOfTurns(SESSION, [], 5000), []);
  });

  it('says which turns have an entry (own spans, or an acceptance of one of its inputs), by position; no turns, no statement', async () => {
    const { repo, dataSource } = repository([{ ord: '2' }]);
    assert.deepEqual([...(await repo.withSpans(SESSION, turns))], [1]);
    const [sql, parameters] = dataSource.query.mock.calls[0]!.arguments as [unknown, unknown[]];
    assert.match(String(sql), /s\.turn_id = o\.turn_id\)\s+OR EXISTS[\s\S]*s\.turn_id IS NULL AND s\.input_id = ANY \(o\.inputs::uuid\[\]\)/);
    assert.deepEqual(parameters, [SESSION, turns.map((t) => t.id), turns.map((t) => t.traceId), inputs]);
    const empty = repository([]);
    assert.equal((await empty.repo.withSpans(SESSION, [])).size, 0);
    assert.equal(empty.dataSource.query.mock.callCount(), 0);
  });

  it('stores each span with its turn, parent and accepted input', async () => {
    const { repo, dataSource } = repository([]);
    const [row] = spansOf(0, [1]);
    await repo.insert([{ sessionId: SESSION, traceId: row!.span.traceId, spanId: row!.span.spanId, turnId: null, parentSpanId: 'a'.repeat(16), inputId: INPUT_A, span: row!.span, resource: RESOURCE, scope: SCOPE, startAt: new Date(0) }]);
    const [sql, parameters] = dataSource.query.mock.calls[0]!.arguments as [unknown, unknown[]];
    assert.match(String(sql), /turn_id uuid, parent_span_id varchar, input_id uuid/);
    const [stored] = JSON.parse(parameters[0] as string) as Record<string, unknown>[];
    assert.deepEqual([stored!.turn_id, stored!.parent_span_id, stored!.input_id], [null, 'a'.repeat(16), INPUT_A]);
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
