import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { AttachmentTransitions, type FrozenInputConfig, type HeldTurn, type InputEntity, InputsRepository, ItemsRepository, RunsRepository, SessionTransactions, StepsRepository, TreeRepository, TurnClaims, TurnsRepository, TurnTakeovers } from '#libs/engine';
import { aRun, aSession, aTurn, typesOf } from './support/aggregate-fixtures.js';
import { FakeSessionTransactions, rowOf } from './support/fake-session-transactions.js';
import { newTestService } from './support/new-test-service.js';

// How a worker comes to hold a run (TurnClaims.claim): a takeover of the active turn's unleased run
// (TurnTakeovers), or the queue's head as a new turn; and what each case writes and announces.
const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const running = { id: 't1', status: 'in_progress', current_run_id: 'r2', result_run_id: null, waitpoint: null };
const config = { agent_id: 'agent-1', model: 'gpt-test' } as FrozenInputConfig;
const anInput = (over: Partial<InputEntity> = {}): InputEntity =>
  ({ id: 'i1', sessionId: SESSION, receivedSeq: '4', mode: 'follow_up', priority: 0, status: 'pending', messages: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], attachmentFileIds: [], attachmentStatus: 'ready', attachmentError: null, config, turnId: null, runId: null, receivedAt: new Date(), consumedAt: null, cancelledAt: null, ...over }) as InputEntity;

/** `session` as the claim's locked read returns it; `fresh` false: the queue is read again (InputsRepository.claimQueue). */
function claims(session = aSession({ id: SESSION, rootSessionId: SESSION }), fresh = false) {
  const transactions = new FakeSessionTransactions();
  transactions.dataSource.answer = () => [{ ...rowOf(session), account_id: null, fresh }];
  const service = newTestService(TurnClaims, [[SessionTransactions, transactions]]);
  Object.assign(service.mocks.get(AppConfig), { maxActiveTurnsPerOwner: 0, runLeaseMs: 30_000 });
  return { ...service, transactions, inputs: service.mocks.get(InputsRepository), turns: service.mocks.get(TurnsRepository), takeovers: service.mocks.get(TurnTakeovers) };
}

describe('a claim (TurnClaims.claim)', () => {
  it('a session with nothing to take (no row from the locked read) writes and announces nothing', async () => {
    const { sut, transactions, turns } = claims();
    transactions.dataSource.answer = () => [];
    assert.equal(await sut.claim(SESSION, 'r-new', 'worker-2'), null);
    assert.deepEqual([transactions.only.writes, transactions.only.events], [[], []]);
    assert.equal(turns.activeTurn.mock.callCount(), 0);
  });

  it('with an active turn, takes over its unleased run and never reads the queue', async () => {
    const session = aSession({ id: SESSION, currentTurn: running, trustedTools: ['add'] });
    const { sut, inputs, turns, takeovers, transactions } = claims(session);
    // The claim's one read says a budget covers the session: the takeover carries it.
    transactions.dataSource.answer = () => [{ ...rowOf(session), account_id: null, fresh: true, budgeted: true }];
    const active = aTurn({ sessionId: SESSION, currentRunId: 'r2' });
    const held = { turn: active, run: aRun({ id: 'r2' }), fresh: false } as HeldTurn;
    turns.activeTurn.mock.mockImplementation(async () => active);
    takeovers.takeOver.mock.mockImplementation(async () => held);
    const claimed = await sut.claim(SESSION, 'r-new', 'worker-2');
    assert.deepEqual(takeovers.takeOver.mock.calls[0]!.arguments.slice(1), [active, 'worker-2', ['add'], true]);
    assert.equal(claimed?.run.id, 'r2');
    assert.equal(inputs.claimQueue.mock.callCount(), 0, 'the queue waits behind the active turn');
  });

  it('takes nothing from a paused queue, nor for a member its tree\'s cap does not admit yet', async () => {
    const paused = claims(aSession({ id: SESSION, queuePaused: true, pendingInputCount: 1 }));
    assert.equal(await paused.sut.claim(SESSION, 'r-new', 'worker-2'), null);
    assert.equal(paused.inputs.claimQueue.mock.callCount(), 0);
    const member = claims(aSession({ id: SESSION, depth: 1, pendingInputCount: 1 }));
    member.mocks.get(TreeRepository).admission.mock.mockImplementation(async () => ({ cap: 2, running: 1, queuedBefore: 1 }));
    assert.equal(await member.sut.claim(SESSION, 'r-new', 'worker-2'), null);
    assert.equal(member.inputs.claimQueue.mock.callCount(), 0);
    assert.deepEqual(member.transactions.only.writes, []);
  });

  it('starts the queue\'s head as a new turn in one composed write: run created, turn created and in progress, its items, under the run\'s epoch', async () => {
    const { sut, inputs, transactions, mocks } = claims(aSession({ id: SESSION, pendingInputCount: 1 }));
    inputs.claimQueue.mock.mockImplementation(async () => [anInput()]);
    transactions.rows = (fragment) => (fragment.name === 'run' ? [{ epoch: 6 }] : [{ admitted: true }]);
    const held = await sut.claim(SESSION, 'r-new', 'worker-2');
    const { writes, events, emitOptions } = transactions.only;
    assert.ok(writes.length >= 4, 'session overview, turn, run, consumed input (and items)');
    assert.deepEqual(typesOf(events).slice(0, 3), ['yuxi.session.run.created', 'agent.session.turn.created', 'agent.session.turn.in_progress']);
    assert.deepEqual(typesOf(events).slice(3), ['agent.session.turn.item.added', 'agent.session.turn.item.done']);
    assert.ok(emitOptions.epochSql, 'the events carry the epoch the same statement gives the run');
    assert.deepEqual(held?.lease, { runId: 'r-new', owner: 'worker-2', epoch: 6 });
    assert.deepEqual([held?.fresh, held?.lastInputSeq, held?.outputIndex, held?.steps], [true, '4', 1, []]);
    assert.equal(mocks.get(AttachmentTransitions).bindToMessages.mock.callCount(), 0, 'no files: nothing to bind');
  });

  it('an account at its cap of running turns (the write says not admitted) rolls the whole claim back: the input stays queued', async () => {
    const { sut, inputs, transactions } = claims(aSession({ id: SESSION, pendingInputCount: 1 }));
    inputs.claimQueue.mock.mockImplementation(async () => [anInput()]);
    transactions.rows = (fragment) => (fragment.name === 'run' ? [{ epoch: 6 }] : [{ admitted: false }]);
    assert.equal(await sut.claim(SESSION, 'r-new', 'worker-2'), null);
    assert.deepEqual(transactions.dataSource.transactions.map((t) => t.outcome), ['rolled_back']);
  });

  it('a locked read whose queue rows are current takes the head from them, with no second read; none ready: nothing', async () => {
    const { sut, inputs, transactions } = claims(aSession({ id: SESSION, pendingInputCount: 1 }), true);
    assert.equal(await sut.claim(SESSION, 'r-new', 'worker-2'), null);
    assert.equal(inputs.claimQueue.mock.callCount(), 0);
    assert.deepEqual(transactions.only.writes, []);
  });
});

describe('a takeover (TurnTakeovers.takeOver)', () => {
  it('leases the active turn\'s unleased run and resumes from its committed steps', async () => {
    const { sut, mocks } = newTestService(TurnTakeovers);
    Object.assign(mocks.get(AppConfig), { runLeaseMs: 30_000 });
    const run = aRun({ id: 'r2', leaseOwner: 'worker-2', epoch: 5, config });
    const steps = [{ runId: 'r1', kind: 'model_call' as const, status: 'completed' as const, ref: null, output: {} }];
    mocks.get(RunsRepository).takeOver.mock.mockImplementation(async () => run);
    mocks.get(InputsRepository).lastConsumedSeq.mock.mockImplementation(async () => '4');
    mocks.get(ItemsRepository).countItems.mock.mockImplementation(async () => 3);
    mocks.get(StepsRepository).stepsSinceLastInput.mock.mockImplementation(async () => steps);
    const manager = {} as never;
    const held = await sut.takeOver(manager, aTurn({ currentRunId: 'r2' }), 'worker-2', ['add'], true);
    assert.deepEqual(mocks.get(RunsRepository).takeOver.mock.calls[0]!.arguments, [manager, 's1', 'worker-2', 30_000]);
    assert.deepEqual(held?.lease, { runId: 'r2', owner: 'worker-2', epoch: 5 });
    assert.deepEqual([held?.fresh, held?.lastInputSeq, held?.outputIndex, held?.steps, held?.trustedTools, held?.config, held?.budgeted], [false, '4', 3, steps, ['add'], config, true]);
  });

  it('takes nothing while the run is held by a live worker, reading nothing more', async () => {
    const { sut, mocks } = newTestService(TurnTakeovers);
    mocks.get(RunsRepository).takeOver.mock.mockImplementation(async () => null);
    assert.equal(await sut.takeOver({} as never, aTurn(), 'worker-2', [], false), null);
    assert.equal(mocks.get(StepsRepository).stepsSinceLastInput.mock.callCount(), 0);
  });
});
