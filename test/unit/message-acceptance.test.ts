import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { DataSource } from 'typeorm';
import type { Principal } from '#libs/auth';
import type { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { EventOutbox, type EventPublisher, OutboxSubscribers } from '#libs/events';
import { type AfterCommit, type Committed, IdempotencyService, InputsRepository, type MessageSpec, type ReceiptRow, type SessionControls } from '#libs/engine';
import { type Acceptance, type InlineImageBatch, MessageAcceptance } from '#libs/protocol';

// The message acceptance orchestrator with its repositories' SQL as it is and the database, the
// after-commit path and the locking path faked: how many statements each case costs, and which
// path it takes. What the statements do on Postgres is the e2e suites' (idempotency, steer, fifo).

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const OWNER = '01a22bfa-0000-7000-8000-000000000001';
const principal = { userId: OWNER, actorId: OWNER, operatorFor: null } as unknown as Principal;
const spec: MessageSpec = { requestedMode: 'follow_up', hasOverride: false, messages: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] as unknown as MessageSpec['messages'], attachmentFileIds: [], config: () => ({ model: 'm' }) as ReturnType<MessageSpec['config']> };
const noImages = { fileIds: [], staging: undefined, bind: async () => undefined } as unknown as InlineImageBatch;
const intent = { operation: 'agent.session.input.message', session_id: SESSION, text: 'hi' };

function sessionRow(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: SESSION, owner_id: OWNER, agent_id: 'a', model: 'm', tool_approval_mode: 'auto', instructions: '', title: 't', project_id: null, workdir_id: SESSION,
    archived: false, queue_paused: false, input_seq: 3, item_seq: 9, turn_seq: 2, pending_input_count: 0, depth: 0, root_session_id: SESSION,
    current_turn: { id: 't2', status: 'completed' }, row_version: '777', workdir_deleted: false, request_hash: null, ...overrides,
  };
}

function receiptRow(requestHash: string, overrides: Partial<ReceiptRow> = {}): Partial<ReceiptRow> {
  return { request_hash: requestHash, response_status: 202, response_body: '{"first":true}', receipt: null, session_id: SESSION, session_deleted: false, expired: false, ...overrides };
}

let statements: string[];
let answers: (unknown[] | Error)[];
let lookups: number;
let sent: Committed[];
let locked: { looked: boolean; staging?: unknown }[];
let orchestrator: MessageAcceptance;
/** The storage quota, faked: off unless a test turns it on; `admitted` counts its checks. */
let quota: { on: boolean; admitted: number; full: boolean; admit: () => Promise<void>; gate: (owner: string, staging: unknown) => unknown };

beforeEach(() => {
  statements = [];
  answers = [];
  lookups = 0;
  sent = [];
  locked = [];
  quota = {
    on: false,
    admitted: 0,
    full: false,
    admit: async () => {
      quota.admitted += 1;
      if (quota.full) throw new DomainError('storage_quota_exceeded', 'full', { used_bytes: 10, quota_bytes: 10 });
    },
    gate: (_owner, staging) => ({ gated: staging }),
  };
  const dataSource = {
    manager: { create: (_cls: unknown, row: object) => ({ ...row }) },
    query: async (sql: unknown) => {
      statements.push(String(sql));
      const answer = answers.shift() ?? [];
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as DataSource;
  const receipts = { query: async () => (lookups++, [receiptRow(IdempotencyService.hashIntent(intent))]) };
  const idempotency = new IdempotencyService(dataSource, receipts as never, { idempotencyTtlHours: 24 } as AppConfig);
  const inputs = new InputsRepository({} as never, { recoveryGraceMs: 1000 } as AppConfig);
  const publisher = { stamp: (_id: string, events: object[]) => events } as unknown as EventPublisher;
  const outbox = new EventOutbox(dataSource, publisher, new OutboxSubscribers());
  const afterCommit = { send: async (committed: Committed) => (sent.push(committed), { complete: true }) } as unknown as AfterCommit;
  const acceptance = {
    accept: async (...args: unknown[]) => (locked.push({ looked: args[6] === true, ...(quota.on ? { staging: args[5] } : {}) }), { status: 202, body: '{"locked":true}', replayed: false, receipt: null, sessionId: SESSION }),
  } as unknown as Acceptance;
  orchestrator = new MessageAcceptance(dataSource, idempotency, inputs, outbox, afterCommit, acceptance, {} as SessionControls, quota as never);
});

const written = (rows = 1) => Array.from({ length: rows }, (_, i) => ({ seq: String(10 + i), type: 'yuxi.session.event.accepted', payload: '{}' }));
const duplicate = () => Object.assign(new Error('duplicate key'), { driverError: { code: '23505', constraint: 'idempotency_receipts_owner_id_scope_idempotency_key_key' } });

describe('message acceptance', () => {
  it('accepts a follow-up to an idle session in two statements: one read, one write that is its own transaction', async () => {
    answers = [[sessionRow()], written()];
    const { result, steersRunningTurn } = await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.equal(result.status, 202);
    assert.equal(result.replayed, false);
    assert.equal(steersRunningTurn, false);
    assert.equal(statements.length, 2);
    assert.ok(!statements.some((sql) => /START TRANSACTION|BEGIN|COMMIT/i.test(sql)));
    const write = statements[1]!;
    for (const part of ['UPDATE sessions', 'xmin = ', 'INSERT INTO inputs', 'INSERT INTO session_events', 'INSERT INTO idempotency_receipts']) assert.ok(write.includes(part), part);
    // A plain insert: a receipt of the key fails the whole statement instead of leaving its other writes done.
    assert.ok(!write.includes('ON CONFLICT'));
    assert.equal(locked.length, 0);
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0]!.nudges, [{ kind: 'queue' }]);
    assert.equal(sent[0]!.batch.rows[0]!.seq, 10);
    assert.equal(JSON.parse(result.body).input_id, result.receipt?.input_id);
  });

  it('replays a live receipt of the key from the read, writing nothing', async () => {
    answers = [[sessionRow(receiptRow(IdempotencyService.hashIntent(intent)))]];
    const { result } = await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.deepEqual([result.replayed, result.body, statements.length, locked.length], [true, '{"first":true}', 1, 0]);
  });

  it('answers 409 for the key used with another intent, and 404 for a session the caller does not see', async () => {
    answers = [[sessionRow(receiptRow('another'))]];
    await assert.rejects(orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages), (error: unknown) => error instanceof DomainError && error.code === 'idempotency_conflict');
    answers = [[{ id: null, request_hash: null }]];
    await assert.rejects(orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages), (error: unknown) => error instanceof DomainError && error.code === 'not_found');
    await assert.rejects(orchestrator.accept(principal, 'not-a-uuid', 'k1', intent, spec, noImages), (error: unknown) => error instanceof DomainError && error.code === 'not_found');
    assert.equal(statements.length, 2);
  });

  it('refuses on the read what the session takes no message in (archived), writing nothing', async () => {
    answers = [[sessionRow({ archived: true })]];
    await assert.rejects(orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages), (error: unknown) => error instanceof DomainError && error.code === 'state_conflict');
    assert.equal(statements.length, 1);
  });

  it('takes the locking path, reading the key again, when the session changed since the read (the guarded write matched no row)', async () => {
    answers = [[sessionRow()], []];
    const { result } = await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.equal(result.body, '{"locked":true}');
    assert.deepEqual(locked, [{ looked: false }]);
    assert.equal(sent.length, 0);
  });

  it('takes the locking path when another writer appended to the outbox after the write began', async () => {
    answers = [[sessionRow()], Object.assign(new Error('duplicate key'), { driverError: { code: '23505', constraint: 'session_events_pkey' } })];
    await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.deepEqual(locked, [{ looked: false }]);
  });

  it('replays the first response when a concurrent duplicate of the key committed first (the write failed on the receipt key)', async () => {
    answers = [[sessionRow()], duplicate()];
    const { result } = await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.deepEqual([result.replayed, result.body, lookups, locked.length, sent.length], [true, '{"first":true}', 1, 0, 0]);
  });

  it('takes the locking path without a second read of the key when a turn may be active (the mode and the refusals depend on it)', async () => {
    answers = [[sessionRow({ current_turn: { id: 't3', status: 'in_progress' } })]];
    await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.deepEqual([statements.length, locked], [1, [{ looked: true }]]);
  });

  it('takes the locking path at once for files to bind (they need the input row first)', async () => {
    await orchestrator.accept(principal, SESSION, 'k1', intent, { ...spec, attachmentFileIds: ['f1'] }, noImages);
    assert.deepEqual([statements.length, locked], [0, [{ looked: false }]]);
  });

  it('takes an expired receipt over on the locking path (a plain insert would fail on it)', async () => {
    answers = [[sessionRow(receiptRow('old', { expired: true }))]];
    await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.deepEqual(locked, [{ looked: false }]);
  });

  it('with a storage quota: a replay replays without checking it; a new message past it is refused after the read, nothing written', async () => {
    quota.on = true;
    quota.full = true;
    answers = [[sessionRow(receiptRow(IdempotencyService.hashIntent(intent)))]];
    const { result } = await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    assert.deepEqual([result.replayed, quota.admitted], [true, 0]);
    answers = [[sessionRow()]];
    await assert.rejects(orchestrator.accept(principal, SESSION, 'k2', intent, spec, noImages), (error: unknown) => error instanceof DomainError && error.code === 'storage_quota_exceeded');
    assert.deepEqual([quota.admitted, statements.length, locked.length, sent.length], [1, 2, 0, 0]);
  });

  it('with a storage quota: files to bind go to the locking path with the quota gating their staging (checked once no receipt answers)', async () => {
    quota.on = true;
    await orchestrator.accept(principal, SESSION, 'k1', intent, { ...spec, attachmentFileIds: ['f1'] }, noImages);
    assert.deepEqual(locked, [{ looked: false, staging: { gated: undefined } }]);
    assert.equal(quota.admitted, 0);
  });

  it('without a storage quota: no check and the staging as it is', async () => {
    answers = [[sessionRow()], written()];
    await orchestrator.accept(principal, SESSION, 'k1', intent, spec, noImages);
    await orchestrator.accept(principal, SESSION, 'k2', intent, { ...spec, attachmentFileIds: ['f1'] }, noImages);
    assert.deepEqual([quota.admitted, statements.length, locked], [0, 2, [{ looked: false }]]);
  });
});
