import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { type IdempotencyScope, IdempotencyService, type IdempotentResponse, type InputEntity, type MessageSpec, type ReceiptRow, SessionControls } from '#libs/engine';
import { IdempotentWrite, type InlineImageBatch, MessageAcceptance } from '#libs/protocol';
import { Acceptance, type Accepted } from '../../libs/protocol/src/use-cases/acceptance.js';
import { domainError } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// Accepting work at most once per idempotency key (IdempotentWrite) and a message's locking path
// (MessageAcceptance): which case replays, which runs the work, and what the work hands on.
const scope: IdempotencyScope = { ownerId: 'owner-1', scope: 'session:s1:events', key: 'k1', requestHash: 'h1' };
const receipt = (over: Partial<ReceiptRow> = {}): ReceiptRow => ({ request_hash: 'h1', response_status: 202, response_body: '{"first":true}', receipt: null, session_id: 's1', session_deleted: false, expired: false, ...over });
const work = { status: 202, body: { ok: true }, sessionId: 's1', receipt: null };

function writes(first: ReceiptRow | null, later: ReceiptRow | null = first) {
  const service = newTestService(IdempotentWrite);
  const idempotency = service.mocks.get(IdempotencyService);
  idempotency.lookup.mock.mockImplementation(async () => first);
  idempotency.lookup.mock.mockImplementationOnce(async () => first, 0);
  idempotency.lookup.mock.mockImplementationOnce(async () => later, 1);
  idempotency.receiptInsert.mock.mockImplementation(() => ({ sql: 'INSERT', params: [], values: [], body: '{"ok":true}' }));
  service.dataSource.answer = () => [{ id: 'receipt-1' }];
  return { ...service, idempotency };
}

describe('a write at most once per key (IdempotentWrite.execute)', () => {
  it('a live receipt answers its first response: nothing prepared, no transaction', async () => {
    const { sut, dataSource } = writes(receipt());
    let prepared = false;
    const result = await sut.execute(scope, async () => work, async () => void (prepared = true));
    assert.deepEqual([result.replayed, result.body, prepared, dataSource.transactions.length], [true, '{"first":true}', false, 0]);
  });

  it('no receipt: prepares, then runs the work and stores its answer in one transaction (an expired receipt answers nothing)', async () => {
    const { sut, dataSource, idempotency } = writes(receipt({ expired: true }));
    const order: string[] = [];
    const result = await sut.execute(
      scope,
      async () => (order.push('work'), work),
      async () => void order.push('prepare'),
    );
    assert.deepEqual(order, ['prepare', 'work']);
    assert.deepEqual(dataSource.transactions.map((t) => t.outcome), ['committed']);
    assert.equal(idempotency.receiptInsert.mock.calls[0]!.arguments[0], scope);
    assert.deepEqual([result.replayed, result.body, result.status], [false, '{"ok":true}', 202]);
  });

  it('a duplicate that committed first (the receipt insert stored nothing) rolls the work back and replays the first response', async () => {
    const { sut, dataSource } = writes(null, receipt());
    dataSource.answer = () => [];
    const result = await sut.execute(scope, async () => work);
    assert.deepEqual(dataSource.transactions.map((t) => t.outcome), ['rolled_back']);
    assert.equal(result.replayed, true);
  });

  it('a refusal on the state a racing first request left answers that first response; with no first, the refusal stands', async () => {
    const refused = async () => {
      throw new DomainError('waitpoint_stale', 'already resolved');
    };
    assert.equal((await writes(null, receipt()).sut.execute(scope, refused)).replayed, true);
    await assert.rejects(writes(null, null).sut.execute(scope, refused), domainError('waitpoint_stale'));
  });

  it('a failure that is no refusal is not answered by a replay; `looked` skips the first read', async () => {
    const { sut, idempotency } = writes(null);
    await assert.rejects(
      sut.execute(
        scope,
        async () => {
          throw new Error('connection reset');
        },
        undefined,
        true,
      ),
      /connection reset/,
    );
    assert.equal(idempotency.lookup.mock.callCount(), 0);
  });
});

describe('a message\'s locking path (MessageAcceptance)', () => {
  const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
  const principal = { userId: 'owner-1', actorId: 'owner-1', operatorFor: null } as unknown as Principal;
  const spec = { requestedMode: undefined, hasOverride: false, messages: [], attachmentFileIds: ['f1'], config: () => ({}) } as unknown as MessageSpec;

  function locked(replayed: boolean, input: Partial<InputEntity>, steers = false) {
    const service = newTestService(MessageAcceptance);
    const works: Accepted[] = [];
    const manager = {} as never;
    service.mocks.get(Acceptance).accept.mock.mockImplementation(async (_p, _scope, _key, _intent, work): Promise<IdempotentResponse> => {
      if (!replayed) works.push(await work(manager));
      return { status: 202, body: '{}', replayed, receipt: null, sessionId: SESSION };
    });
    service.mocks.get(SessionControls).acceptMessage.mock.mockImplementation(async () => ({ input: { id: 'i1', attachmentStatus: 'ready', ...input } as InputEntity, steersRunningTurn: steers, riding: null }));
    const bound: unknown[][] = [];
    const images = { fileIds: [], staging: undefined, bind: async (...args: unknown[]) => void bound.push(args) } as unknown as InlineImageBatch;
    return { ...service, works, images, bound, manager };
  }

  it('an id that is no UUID names no session: not found, nothing read', async () => {
    const { sut, dataSource, images } = locked(false, {});
    await assert.rejects(sut.accept(principal, 'not-a-uuid', 'k1', {}, spec, images), domainError('not_found'));
    assert.equal(dataSource.query.mock.callCount() + dataSource.transactions.length, 0);
  });

  it('a message with files is accepted under the lock: its input with the files, the preparation nudged before the queue', async () => {
    const { sut, mocks, works, images, bound, manager, dataSource } = locked(false, { attachmentStatus: 'preparing' });
    const { result } = await sut.accept(principal, SESSION, 'k1', {}, spec, images);
    assert.equal(dataSource.query.mock.callCount(), 0, 'no one-statement attempt: files need the input row first');
    assert.deepEqual(mocks.get(SessionControls).acceptMessage.mock.calls[0]!.arguments.slice(1, 3), ['owner-1', SESSION]);
    assert.deepEqual(bound, [[manager, SESSION, 'i1']]);
    assert.deepEqual(works[0]!.nudges, [{ kind: 'prepare', inputId: 'i1' }, { kind: 'queue' }]);
    assert.equal(works[0]!.receipt?.input_id, 'i1');
    assert.equal(result.status, 202);
  });

  it('a steer into the running turn is reported for its worker to be told, unless the response is a replay', async () => {
    const first = locked(false, {}, true);
    assert.equal((await first.sut.accept(principal, SESSION, 'k1', {}, spec, first.images)).steersRunningTurn, true);
    const replay = locked(true, {}, true);
    assert.equal((await replay.sut.accept(principal, SESSION, 'k1', {}, spec, replay.images)).steersRunningTurn, false);
  });
});
