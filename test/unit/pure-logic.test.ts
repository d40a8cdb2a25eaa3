import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ThrottledLog } from '#libs/config';
import { compareStreamIds, decodeCursor, encodeCursor, hasGap, isRetiredCursor, sequenceStep } from '#libs/events';
import { canonicalJson, idAt, isUuid, newId, prepared, QueryLogger } from '#libs/database';
import { DomainError, toDomainError } from '#libs/errors';
import { attachmentBindings, type InputEntity, type ItemEntity, mayHaveActiveTurn, resolveMode } from '#libs/engine';
import { parseAgentInput } from '#libs/protocol';

// Pure logic, no database: cursors, gap detection, canonical JSON, input parsing.
const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';

describe('SSE cursors', () => {
  it('round-trips a position with and without a durable sequence number', () => {
    assert.deepEqual(decodeCursor(SESSION, encodeCursor(SESSION, '1700000000000-3', 42)), { streamId: '1700000000000-3', seq: 42 });
    assert.deepEqual(decodeCursor(SESSION, encodeCursor(SESSION, '5-0', null)), { streamId: '5-0', seq: null });
  });

  it('names an event inside a stream entry by its part; a cursor without one means the whole entry', () => {
    assert.equal(Buffer.from(encodeCursor(SESSION, '5-0', 7, 2), 'base64url').toString(), `v2:${SESSION}:5-0:7:2`);
    assert.deepEqual(decodeCursor(SESSION, encodeCursor(SESSION, '5-0', 7, 2)), { streamId: '5-0', seq: 7, part: 2 });
    assert.deepEqual(decodeCursor(SESSION, encodeCursor(SESSION, '5-0', null, 0)), { streamId: '5-0', seq: null, part: 0 });
    assert.equal(decodeCursor(SESSION, Buffer.from(`v2:${SESSION}:5-0:7:x`).toString('base64url')), null);
    assert.equal(decodeCursor(SESSION, Buffer.from(`v2:${SESSION}:5-0:7:1:2`).toString('base64url')), null);
  });

  it('rejects cursors of another session, foreign versions and garbage', () => {
    assert.equal(decodeCursor('01a22bfa-0000-7000-8000-000000000000', encodeCursor(SESSION, '5-0', 1)), null);
    assert.equal(decodeCursor(SESSION, Buffer.from(`v1:${SESSION}:5-0`).toString('base64url')), null);
    assert.equal(decodeCursor(SESSION, Buffer.from(`v2:${SESSION}:5-0:x`).toString('base64url')), null);
    assert.equal(decodeCursor(SESSION, 'not a cursor!'), null);
    assert.equal(decodeCursor(SESSION, 'A'.repeat(201)), null);
  });

  it('one format: every cursor has the seq field (empty when unknown); the earlier three-part form is refused, and told apart from garbage', () => {
    assert.equal(Buffer.from(encodeCursor(SESSION, '5-0', null), 'base64url').toString(), `v2:${SESSION}:5-0:`);
    assert.equal(Buffer.from(encodeCursor(SESSION, '5-0', 7), 'base64url').toString(), `v2:${SESSION}:5-0:7`);
    const retired = Buffer.from(`v2:${SESSION}:5-0`).toString('base64url');
    assert.equal(decodeCursor(SESSION, retired), null, 'not resumed without its sequence check');
    assert.equal(isRetiredCursor(SESSION, retired), true);
    assert.equal(isRetiredCursor(SESSION, encodeCursor(SESSION, '5-0', null)), false, 'a current cursor is not retired');
    assert.equal(isRetiredCursor('01a22bfa-0000-7000-8000-000000000000', retired), false, 'another session\'s is just invalid');
    assert.equal(isRetiredCursor(SESSION, Buffer.from(`v2:${SESSION}:x-0`).toString('base64url')), false);
    assert.equal(isRetiredCursor(SESSION, Buffer.from(`v1:${SESSION}:5-0`).toString('base64url')), false);
    assert.equal(isRetiredCursor(SESSION, 'not a cursor!'), false);
  });

  it('orders stream ids numerically, not as strings', () => {
    assert.equal(compareStreamIds('9-0', '10-0'), -1);
    assert.equal(compareStreamIds('10-2', '10-10'), -1);
    assert.equal(compareStreamIds('10-10', '10-10'), 0);
    assert.equal(compareStreamIds('11-0', '10-99'), 1);
    // Beyond 2^53 (a cursor may carry any 20 digits) and with leading zeros: still numeric.
    assert.equal(compareStreamIds('18446744073709551615-0', '18446744073709551614-9'), 1);
    assert.equal(compareStreamIds('9007199254740993-0', '9007199254740992-0'), 1);
    assert.equal(compareStreamIds('0010-0', '9-0'), 1);
    assert.equal(compareStreamIds('10-007', '10-7'), 0);
    assert.equal(compareStreamIds('0-0', '0-1'), -1);
    // An id without a sequence part is its entry 0, as Redis reads it.
    assert.equal(compareStreamIds('10', '10-0'), 0);
    assert.equal(compareStreamIds('10', '10-1'), -1);
  });
});

describe('gap detection', () => {
  it('delivers the next durable event, skips a repeated one and flags a missing one', () => {
    assert.equal(sequenceStep(4, 5), 'deliver');
    assert.equal(sequenceStep(5, 5), 'skip');
    assert.equal(sequenceStep(5, 3), 'skip');
    assert.equal(sequenceStep(5, 7), 'gap');
  });

  it('delivers when either position is unknown (old cursors, live entries)', () => {
    assert.equal(sequenceStep(null, 9), 'deliver');
    assert.equal(sequenceStep(3, null), 'deliver');
  });

  it('sees a cursor before the first retained entry, after a deletion or past the end as a gap', () => {
    const info = { lastId: '100-0', firstId: '50-0', maxDeletedId: '0-0' };
    assert.equal(hasGap('60-0', info), false);
    assert.equal(hasGap('40-0', info), true, 'trimmed');
    assert.equal(hasGap('120-0', info), true, 'past the end: the stream was recreated');
    assert.equal(hasGap('60-0', { ...info, maxDeletedId: '70-0' }), true, 'deleted after the cursor');
    assert.equal(hasGap('100-0', { lastId: '100-0', firstId: null, maxDeletedId: '0-0' }), false, 'empty stream, cursor at its end');
    assert.equal(hasGap('90-0', { lastId: '100-0', firstId: null, maxDeletedId: '0-0' }), true, 'empty stream, cursor before its end');
  });
});

describe('canonical JSON (the idempotency intent hash)', () => {
  it('does not depend on key order, drops undefined and keeps array order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, 1], c: undefined } }), '{"a":{"d":[2,1]},"b":1}');
    assert.equal(canonicalJson({ a: 1, b: 2 }), canonicalJson({ b: 2, a: 1 }));
    assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
    assert.equal(canonicalJson(null), 'null');
  });
});

describe('input parsing', () => {
  it('turns a string into one user message of one text block', () => {
    assert.deepEqual(parseAgentInput('hello'), { messages: [{ role: 'user', content: [{ type: 'input_text', text: 'hello' }] }], errors: [] });
  });

  it('collects every problem with its path', () => {
    assert.deepEqual(parseAgentInput('   ').errors, ['input must not be empty']);
    assert.deepEqual(parseAgentInput(42).errors, ['input must be a string or an array of user messages']);
    assert.ok(parseAgentInput([]).errors.some((e) => e.includes('1–20 messages')));
    const errors = parseAgentInput([{ role: 'assistant', content: 'x' }, 'nope']).errors;
    assert.ok(errors.some((e) => e.startsWith('input[0]')));
    assert.ok(errors.some((e) => e.startsWith('input[1]')));
  });
});

describe('prepared statements', () => {
  it('give one text one stable name, and a fresh config per call', () => {
    const a = prepared('SELECT id FROM turns WHERE id = $1') as unknown as { name: string; text: string };
    const b = prepared('SELECT id FROM turns WHERE id = $1') as unknown as { name: string; text: string };
    const c = prepared('SELECT id FROM runs WHERE id = $1') as unknown as { name: string; text: string };
    assert.equal(a.name, b.name);
    assert.notEqual(a, b, 'the driver writes values into the config: never shared');
    assert.notEqual(a.name, c.name);
  });

  it('refuse * (a cached plan breaks when a migration adds a column)', () => {
    assert.throws(() => prepared('SELECT * FROM sessions WHERE id = $1'), /name their columns/);
    assert.throws(() => prepared('UPDATE sessions SET unread = true RETURNING *'), /name their columns/);
    assert.doesNotThrow(() => prepared('SELECT count(*)::int AS n FROM items WHERE turn_id = $1'));
  });
});

describe('input mode (auto, follow_up, steer)', () => {
  const turn = (status: string, cancellationPending = false) => ({ status, cancellationPending }) as Parameters<typeof resolveMode>[0];

  it('auto steers into an executing turn and queues a follow-up when idle or overridden', () => {
    assert.equal(resolveMode(turn('in_progress'), undefined, false), 'steer');
    assert.equal(resolveMode(null, undefined, false), 'follow_up');
    assert.equal(resolveMode(turn('in_progress'), undefined, true), 'follow_up');
  });

  it('refuses every mode into a turn being cancelled or waiting for the caller, with a precise code', () => {
    const code = (expected: string) => (error: unknown) => error instanceof DomainError && error.code === expected;
    for (const mode of ['follow_up', 'steer', undefined] as const) {
      assert.throws(() => resolveMode(turn('in_progress', true), mode, false), code('turn_cancelling'));
      assert.throws(() => resolveMode(turn('requires_action'), mode, false), code('turn_requires_action'));
      assert.throws(() => resolveMode(turn('requires_action'), mode, true), code('turn_requires_action'));
    }
    assert.equal(resolveMode(turn('in_progress'), 'follow_up', false), 'follow_up');
    assert.equal(resolveMode(null, 'steer', false), 'steer');
  });

  it('queues an explicit follow-up behind a client tool wait; auto and steer are refused there', () => {
    const clientTool = { status: 'requires_action', cancellationPending: false, waitpoint: { kind: 'client_tool' } } as Parameters<typeof resolveMode>[0];
    assert.equal(resolveMode(clientTool, 'follow_up', false), 'follow_up');
    assert.throws(() => resolveMode(clientTool, undefined, false), (error: unknown) => error instanceof DomainError && error.code === 'turn_requires_action');
    assert.throws(() => resolveMode(clientTool, 'steer', false), (error: unknown) => error instanceof DomainError && error.code === 'turn_requires_action');
    const cancelling = { ...clientTool!, cancellationPending: true } as Parameters<typeof resolveMode>[0];
    assert.throws(() => resolveMode(cancelling, 'follow_up', false), (error: unknown) => error instanceof DomainError && error.code === 'turn_cancelling');
  });

  it('needs the turns table for a follow-up only when the overview leaves a turn active', () => {
    const summary = (status: string) => ({ id: 't', status, current_run_id: null, result_run_id: null, waitpoint: null });
    assert.equal(mayHaveActiveTurn(null), false);
    for (const settled of ['completed', 'failed', 'cancelled']) assert.equal(mayHaveActiveTurn(summary(settled)), false);
    for (const active of ['queued', 'in_progress', 'requires_action']) assert.equal(mayHaveActiveTurn(summary(active)), true);
  });
});

describe('throttled log', () => {
  it('logs a repeated condition once per interval and key', () => {
    const lines: string[] = [];
    const log = new ThrottledLog({ warn: (m: string) => lines.push(m), error: (m: string) => lines.push(`E ${m}`) }, 60_000);
    log.warn('redis down');
    log.warn('redis down');
    log.warn('job failed', 'recovery.sweep');
    log.error('job failed again', 'recovery.sweep');
    assert.deepEqual(lines, ['redis down', 'job failed']);
  });
});

describe('query logger', () => {
  it('logs failed and slow statements, prepared or strings, without throwing, and never their parameters', () => {
    const lines: string[] = [];
    const logger = new QueryLogger();
    (logger as unknown as { logger: { warn(message: string): void } }).logger = { warn: (message) => lines.push(message) };
    // Called as TypeORM calls it: with the statement's parameters (and a prepared statement's values).
    const asTypeOrm = logger as unknown as { logQueryError(error: string | Error, query: unknown, parameters?: unknown[]): void; logQuerySlow(time: number, query: unknown, parameters?: unknown[]): void };
    const secret = 'the user wrote this secret message';
    asTypeOrm.logQueryError(new Error('timeout'), { name: 'p1', text: 'SELECT id\nFROM sessions WHERE id = $1', values: [secret] }, [secret]);
    asTypeOrm.logQueryError('boom', 'INSERT INTO inputs VALUES ($1)', [secret]);
    asTypeOrm.logQueryError('odd', 42);
    asTypeOrm.logQuerySlow(1234, 'UPDATE inputs SET content = $1', [secret]);
    assert.deepEqual(lines, ['query failed: timeout (SELECT id)', 'query failed: boom (INSERT INTO inputs VALUES ($1))', 'query failed: odd ()', 'slow query (1234 ms): UPDATE inputs SET content = $1']);
    assert.ok(!lines.some((line) => line.includes(secret)), 'no parameter in any line');
  });
});

describe('database errors at the edge', () => {
  const req = { method: 'POST', path: '/api/v1/agents/sessions' } as Parameters<typeof toDomainError>[1];
  const quiet = { error: () => undefined, warn: () => undefined } as unknown as Parameters<typeof toDomainError>[2];

  it('answers a deadlock, a serialization failure or a statement timeout 503 retryable, a unique violation 409, anything else 500', () => {
    for (const code of ['40P01', '40001', '55P03', '57014']) assert.equal(toDomainError({ code, message: 'x' }, req, quiet).code, 'service_unavailable', code);
    assert.equal(toDomainError({ code: '23505', message: 'duplicate key' }, req, quiet).code, 'state_conflict');
    assert.equal(toDomainError({ code: '57P01', message: 'terminating' }, req, quiet).code, 'service_unavailable');
    assert.equal(toDomainError(new Error('timeout exceeded when trying to connect'), req, quiet).code, 'service_unavailable');
    assert.equal(toDomainError(new TypeError('bug'), req, quiet).code, 'internal_error');
  });
});

describe('ids: UUIDv7 from a pooled random source', () => {
  const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  // First: the tests below move the id clock into the future.
  it('newId follows the wall clock', () => {
    const before = Date.now();
    const id = newId();
    const ms = Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
    assert.ok(ms >= before && ms <= Date.now(), `${before} <= ${ms} <= now`);
    assert.match(id, V7);
  });

  it('are version 7, variant 10, and carry the millisecond they were made in', () => {
    const ms = 1_900_000_000_000;
    const id = idAt(ms);
    assert.match(id, V7);
    assert.ok(isUuid(id));
    assert.equal(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16), ms);
  });

  it('increase strictly within one millisecond, across pool refills, and when the clock steps back', () => {
    const ids = [idAt(2_000_000_000_000)];
    // More ids than one pool holds (256), all in the same millisecond.
    for (let i = 0; i < 1000; i += 1) ids.push(idAt(2_000_000_000_000));
    // The clock steps back: ids still increase (the counter goes on in the newest millisecond seen).
    for (let i = 0; i < 10; i += 1) ids.push(idAt(1_999_999_999_000));
    ids.push(idAt(2_000_000_000_001));
    for (let i = 1; i < ids.length; i += 1) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} < ${ids[i]} at ${i}`);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, V7);
  });

});

describe('attachment bindings at a claim', () => {
  const input = (id: string, files: string[]) => ({ id, attachmentFileIds: files }) as unknown as InputEntity;
  const item = (id: string, inputId: string) => ({ id, inputId }) as unknown as ItemEntity;

  it("bind each input's files to its last user message; the other messages get none", () => {
    const inputs = [input('in-1', ['f-1', 'f-2']), input('in-2', []), input('in-3', ['f-3'])];
    const items = [item('m-1', 'in-1'), item('m-2', 'in-1'), item('m-3', 'in-2'), item('m-4', 'in-3')];
    assert.deepEqual(attachmentBindings(inputs, items), [
      { inputId: 'in-1', messageId: 'm-2' },
      { inputId: 'in-3', messageId: 'm-4' },
    ]);
  });

  it('bind nothing for inputs without files or without a message', () => {
    assert.deepEqual(attachmentBindings([input('in-1', []), input('in-2', ['f-1'])], [item('m-1', 'in-1')]), []);
  });
});
