import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityManager } from 'typeorm';
import { AuditLog } from '#libs/audit';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { EventOutbox } from '#libs/events';
import { AfterCommit, type IdempotentResponse, type Nudge, SessionControls, SessionsRepository, TurnsRepository } from '#libs/engine';
import { BULK_CANCEL_MAX, BULK_CANCEL_SAMPLE, BulkCancelSessions, type BulkCancelResultDto } from '#libs/operations';
import { aBatch, aSession, aTurn, domainError, typesOf } from './support/aggregate-fixtures.js';
import { newTestService, quietNestLogger } from './support/new-test-service.js';

// An operator's bulk cancel (BulkCancelSessions): each selected session in a transaction of its own,
// through the lifecycle's cancel, audited; skipped when its turn ended meanwhile; the whole call
// idempotent by its key.
const principal = { userId: 'admin', actorId: 'admin', keyId: 'key-1' } as Principal;

/** What runs the call at most once per key (the constructor's last parameter): the work when no receipt answers, then the receipt's own transaction. */
interface ReceiptWriter {
  execute(scope: { ownerId: string; scope: string; key: string }, respond: (manager: EntityManager) => Promise<{ status: number; body: unknown }>, work?: () => Promise<void>): Promise<IdempotentResponse>;
}

function bulk(targets: { sessionId: string; turnId: string }[], total = targets.length) {
  const service = newTestService(BulkCancelSessions);
  const { mocks } = service;
  const sessions = mocks.get(SessionsRepository);
  const controls = mocks.get(SessionControls);
  const idempotency = mocks.at<ReceiptWriter>(BulkCancelSessions.length - 1);
  sessions.cancellable.mock.mockImplementation(async () => ({ total, targets }));
  sessions.lock.mock.mockImplementation(async (_m, id) => aSession({ id }));
  mocks.get(TurnsRepository).findTurn.mock.mockImplementation(async (_m, id) => aTurn({ id }));
  controls.cancelTurn.mock.mockImplementation(async (_m, session, target) => ({
    turn: aTurn({ id: target.turnId, sessionId: session.id, cancellationPending: true, currentRunId: `run-of-${target.turnId}` }),
    runId: `run-of-${target.turnId}`,
    events: [],
    nudges: [],
  }));
  mocks.get(EventOutbox).append.mock.mockImplementation(async (_m, sessionId) => aBatch(sessionId));
  mocks.get(AfterCommit).send.mock.mockImplementation(async () => ({}) as never);
  // No receipt answers the key: the work runs, then the receipt's transaction stores its answer.
  idempotency.execute.mock.mockImplementation(async (_scope, respond, work): Promise<IdempotentResponse> => {
    await work?.();
    const answer = await respond({} as never);
    return { status: answer.status, body: JSON.stringify(answer.body), replayed: false, receipt: null, sessionId: null };
  });
  return { ...service, sessions, controls, idempotency, audit: mocks.get(AuditLog), outbox: mocks.get(EventOutbox), afterCommit: mocks.get(AfterCommit) };
}

const bodyOf = (response: IdempotentResponse) => JSON.parse(response.body) as BulkCancelResultDto;

describe('an operator\'s bulk cancel (BulkCancelSessions)', () => {
  quietNestLogger();
  it('a dry run only counts and samples: no transaction, no cancel', async () => {
    const { sut, sessions, controls, dataSource } = bulk([{ sessionId: 's1', turnId: 't1' }], 2_000);
    const result = await sut.dryRun({ status: 'in_progress' } as never);
    assert.deepEqual(sessions.cancellable.mock.calls[0]!.arguments, [{ turnStatuses: ['in_progress'], agentId: undefined, ownerId: undefined, createdBefore: undefined, createdAfter: undefined }, BULK_CANCEL_SAMPLE]);
    assert.deepEqual([result.dry_run, result.matched, result.session_ids, result.has_more], [true, 2_000, ['s1'], true]);
    assert.equal(dataSource.transactions.length + controls.cancelTurn.mock.callCount(), 0);
  });

  it('cancels each selected turn in a transaction of its own under its session\'s lock, audited, announced as a client\'s cancel', async () => {
    const { sut, sessions, controls, audit, outbox, dataSource } = bulk([
      { sessionId: 's1', turnId: 't1' },
      { sessionId: 's2', turnId: 't2' },
    ]);
    const response = await sut.execute(principal, {} as never, 'key-1');
    assert.deepEqual(sessions.cancellable.mock.calls[0]!.arguments[1], BULK_CANCEL_MAX);
    assert.deepEqual(dataSource.transactions.map((t) => t.outcome), ['committed', 'committed']);
    assert.deepEqual(sessions.lock.mock.calls.map((c) => [c.arguments[0], c.arguments[1]]), [[dataSource.transactions[0]!.manager, 's1'], [dataSource.transactions[1]!.manager, 's2']]);
    assert.deepEqual(controls.cancelTurn.mock.calls.map((c) => c.arguments[2]), [{ turnId: 't1' }, { turnId: 't2' }], 'the selected turn only, never a later one');
    const entry = audit.record.mock.calls[0]!.arguments[1];
    assert.deepEqual([entry.action, entry.targetId, entry.details], ['session.cancel_requested', 's1', { turn_id: 't1', owner_id: 'owner-1', bulk: true, idempotency_key: 'key-1' }]);
    assert.deepEqual(typesOf(outbox.append.mock.calls[0]!.arguments[2]), ['yuxi.session.event.accepted', 'yuxi.session.turn.state']);
    assert.deepEqual([bodyOf(response).session_ids, bodyOf(response).skipped, bodyOf(response).has_more], [['s1', 's2'], [], false]);
  });

  it('after each commit asks the run\'s worker to stop, with the lifecycle\'s own nudges', async () => {
    const { sut, controls, afterCommit } = bulk([{ sessionId: 's1', turnId: 't1' }]);
    const parent: Nudge = { kind: 'cooperation', parentSessionId: 'p1' };
    controls.cancelTurn.mock.mockImplementation(async () => ({ turn: aTurn({ cancellationPending: true }), runId: 'r1', events: [], nudges: [parent] }));
    await sut.execute(principal, {} as never, 'key-1');
    assert.deepEqual(afterCommit.send.mock.calls[0]!.arguments[0], { batch: aBatch('s1'), nudges: [parent, { kind: 'cancel', runId: 'r1' }] });
  });

  it('a turn ended at its waitpoint by the cancel has no worker to stop', async () => {
    const { sut, controls, afterCommit } = bulk([{ sessionId: 's1', turnId: 't1' }]);
    controls.cancelTurn.mock.mockImplementation(async () => ({ turn: aTurn({ status: 'cancelled', completedAt: new Date() }), runId: 'r1', events: [], nudges: [] }));
    await sut.execute(principal, {} as never, 'key-1');
    assert.deepEqual(afterCommit.send.mock.calls[0]!.arguments[0].nudges, []);
  });

  it('skips, and reports, a session deleted, a turn already being cancelled, or a turn that ended since the selection; the rest go on', async () => {
    const { sut, mocks, sessions, controls, audit, afterCommit, dataSource } = bulk([
      { sessionId: 'gone', turnId: 't0' },
      { sessionId: 's1', turnId: 'asked' },
      { sessionId: 's2', turnId: 'ended' },
      { sessionId: 's3', turnId: 't3' },
    ]);
    sessions.lock.mock.mockImplementation(async (_m, id) => (id === 'gone' ? null : aSession({ id })));
    mocks.get(TurnsRepository).findTurn.mock.mockImplementation(async (_m, id) => aTurn({ id, cancellationPending: id === 'asked' }));
    controls.cancelTurn.mock.mockImplementation(async (_m, session, target) => {
      if (target.turnId === 'ended') throw new DomainError('state_conflict', 'Turn ended has already ended');
      return { turn: aTurn({ id: target.turnId, sessionId: session.id, cancellationPending: true }), runId: 'r1', events: [], nudges: [] };
    });
    const body = bodyOf(await sut.execute(principal, {} as never, 'key-1'));
    assert.deepEqual(body.skipped, [
      { session_id: 'gone', code: 'not_found' },
      { session_id: 's1', code: 'state_conflict' },
      { session_id: 's2', code: 'state_conflict' },
    ]);
    assert.deepEqual(body.session_ids, ['s3']);
    assert.deepEqual(dataSource.transactions.map((t) => t.outcome), ['rolled_back', 'rolled_back', 'rolled_back', 'committed']);
    assert.deepEqual(audit.record.mock.calls.map((c) => c.arguments[1].targetId), ['s3'], 'audited once, for what was done');
    assert.equal(afterCommit.send.mock.callCount(), 1);
  });

  it('an unexpected failure is not a skip: it fails the call', async () => {
    const { sut, controls } = bulk([{ sessionId: 's1', turnId: 't1' }]);
    controls.cancelTurn.mock.mockImplementation(async () => {
      throw new Error('connection reset');
    });
    await assert.rejects(sut.execute(principal, {} as never, 'key-1'), /connection reset/);
  });

  it('says has_more when more matched than one call takes', async () => {
    const { sut } = bulk([{ sessionId: 's1', turnId: 't1' }], BULK_CANCEL_MAX + 1);
    assert.equal(bodyOf(await sut.execute(principal, {} as never, 'key-1')).has_more, true);
  });

  it('a replayed key answers the first response and cancels nothing; a call without a key is refused', async () => {
    const { sut, idempotency, controls, sessions } = bulk([{ sessionId: 's1', turnId: 't1' }]);
    const first: IdempotentResponse = { status: 200, body: '{"object":"admin.bulk_cancel"}', replayed: true, receipt: null, sessionId: null };
    idempotency.execute.mock.mockImplementation(async () => first);
    assert.equal(await sut.execute(principal, {} as never, 'key-1'), first);
    assert.equal(sessions.cancellable.mock.callCount() + controls.cancelTurn.mock.callCount(), 0);
    const [scope] = idempotency.execute.mock.calls[0]!.arguments;
    assert.deepEqual([scope.ownerId, scope.scope, scope.key], ['admin', 'admin.sessions.bulk_cancel', 'key-1']);
    await assert.rejects(sut.execute(principal, {} as never, undefined), domainError('idempotency_key_required'));
  });
});
