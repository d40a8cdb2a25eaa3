import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { type PublicError, RunRecovery, RunsRepository, type Seized, SessionsRepository, TurnsRepository } from '#libs/engine';
import { RunOutputWriter } from '../../libs/engine/src/endings/run-output.js';
import { aBatch, aLease, aRun, aSession, aTurn, domainError } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// How a run its worker no longer holds is ended or handed on (RunRecovery: the sweep's interrupt, the
// operator's seize and fail): which repositories each case asks, in which order, and what it hands
// to the after-commit path. (A worker's takeover of the run handed on is a claim's: TurnClaims.)

function recovery(config: Partial<AppConfig> = {}) {
  const service = newTestService(RunRecovery);
  Object.assign(service.mocks.get(AppConfig), { runMaxTakeovers: 3, runLeaseMs: 30_000, ...config });
  const sessions = service.mocks.get(SessionsRepository);
  const runs = service.mocks.get(RunsRepository);
  const turns = service.mocks.get(TurnsRepository);
  const writer = service.mocks.get(RunOutputWriter);
  const order: string[] = [];
  sessions.lock.mock.mockImplementation(async () => {
    order.push('session lock');
    return aSession();
  });
  runs.lockExpiredRun.mock.mockImplementation(async () => {
    order.push('run lock');
    return true;
  });
  turns.findTurn.mock.mockImplementation(async () => aTurn());
  writer.closeShown.mock.mockImplementation(async () => ({ closing: [], index: 2 }));
  return { ...service, sessions, runs, turns, writer, order };
}

const ended = (status: 'cancelled' | 'failed') => ({ turn: aTurn({ status, completedAt: new Date() }), batch: aBatch(), nudges: [] });

describe('recovery of a run whose lease expired (RunRecovery.interruptExpired)', () => {
  it('leaves a run whose heartbeat renewed in time untouched: re-checked under the session lock, then nothing written', async () => {
    const { sut, runs, writer, order, dataSource } = recovery();
    runs.lockExpiredRun.mock.mockImplementation(async () => {
      order.push('run lock');
      return false;
    });
    assert.equal(await sut.interruptExpired(aRun(), new Map()), null);
    assert.deepEqual(order, ['session lock', 'run lock']);
    assert.equal(writer.closeShown.mock.callCount(), 0);
    assert.equal(runs.interruptRun.mock.callCount(), 0);
    assert.equal(dataSource.transactions.length, 1);
  });

  it('hands the turn on: what clients saw is closed, a new epoch fences the old worker, and the successor waits for any worker', async () => {
    const { sut, runs, writer } = recovery();
    const shown = new Map([['item-1', { outputIndex: 1, text: 'Hel' }]]);
    const next = aRun({ id: 'r2', leaseOwner: null, epoch: 8 });
    runs.interruptionsOf.mock.mockImplementation(async () => 2);
    runs.nextEpoch.mock.mockImplementation(async () => 8);
    runs.interruptRun.mock.mockImplementation(async () => ({ interrupted: aRun({ status: 'interrupted' }), next }));
    writer.announceSuccessor.mock.mockImplementation(async () => ({ run: next, lease: null, outputIndex: 2, batch: aBatch(), nudges: [{ kind: 'takeover', runId: 'r2' }] }));
    const result = await sut.interruptExpired(aRun(), shown);
    assert.equal(writer.closeShown.mock.calls[0]!.arguments[3], shown);
    const [, runId, lease, spec] = runs.interruptRun.mock.calls[0]!.arguments;
    assert.deepEqual([runId, lease, spec.epoch, spec.inputIds], ['r1', null, 8, []], 'no lease: the sweep holds none');
    assert.equal(writer.announceSuccessor.mock.calls[0]!.arguments[4], 8);
    assert.equal(writer.endRun.mock.callCount(), 0);
    assert.equal(result?.awaiting, 'r2');
    assert.deepEqual(result?.nudges, [{ kind: 'takeover', runId: 'r2' }]);
  });

  it('ends a turn being cancelled instead of handing it on, and wakes the queue', async () => {
    const { sut, runs, turns, writer } = recovery();
    turns.findTurn.mock.mockImplementation(async () => aTurn({ cancellationPending: true }));
    writer.endRun.mock.mockImplementation(async () => ({ ...ended('cancelled'), nudges: [{ kind: 'cooperation', parentSessionId: 'p1' }] }));
    const result = await sut.interruptExpired(aRun(), new Map());
    const [, , , lease, status, error] = writer.endRun.mock.calls[0]!.arguments;
    assert.deepEqual([lease, status, error], [null, 'cancelled', null]);
    assert.equal(runs.interruptionsOf.mock.callCount(), 0, 'a cancel ends it whatever the count');
    assert.equal(runs.interruptRun.mock.callCount(), 0);
    assert.deepEqual(result, { batch: aBatch(), nudges: [{ kind: 'queue' }, { kind: 'cooperation', parentSessionId: 'p1' }], awaiting: null });
  });

  it('fails a turn interrupted as often as RUN_MAX_TAKEOVERS allows, with run_takeover_limit', async () => {
    const { sut, runs, writer } = recovery({ runMaxTakeovers: 3 });
    runs.interruptionsOf.mock.mockImplementation(async () => 3);
    writer.endRun.mock.mockImplementation(async () => ended('failed'));
    const result = await sut.interruptExpired(aRun(), null);
    const [, , , , status, error] = writer.endRun.mock.calls[0]!.arguments;
    assert.equal(status, 'failed');
    assert.equal((error as PublicError).code, 'run_takeover_limit');
    assert.equal(runs.nextEpoch.mock.callCount(), 0);
    assert.equal(result?.awaiting, null);
  });

  it('answers null when the turn is gone, or the run ended meanwhile (the conditional interrupt matched nothing)', async () => {
    const { sut, runs, turns, writer } = recovery();
    turns.findTurn.mock.mockImplementation(async () => null);
    assert.equal(await sut.interruptExpired(aRun(), new Map()), null);
    assert.equal(writer.closeShown.mock.callCount(), 0);
    turns.findTurn.mock.mockImplementation(async () => aTurn());
    runs.interruptionsOf.mock.mockImplementation(async () => 0);
    runs.interruptRun.mock.mockImplementation(async () => null);
    assert.equal(await sut.interruptExpired(aRun(), new Map()), null);
    assert.equal(writer.announceSuccessor.mock.callCount(), 0);
  });
});

describe('the operator\'s fail-turn (RunRecovery.seize, failSeized)', () => {
  function seizing(turn = aTurn(), current = aRun()) {
    const service = recovery();
    service.turns.findTurn.mock.mockImplementation(async () => turn);
    service.runs.getRunIn.mock.mockImplementation(async () => current);
    service.runs.nextEpoch.mock.mockImplementation(async () => 9);
    return service;
  }

  it('takes the lease of the turn\'s run for the operator under a new epoch, naming who held it', async () => {
    const { sut, runs } = seizing();
    runs.seizeRun.mock.mockImplementation(async () => aRun({ leaseOwner: 'ops', epoch: 9 }));
    const seized = await sut.seize('t1', 'ops');
    assert.deepEqual(runs.seizeRun.mock.calls[0]!.arguments.slice(1), ['r1', 'ops', 9, 30_000]);
    assert.deepEqual(seized.lease, { runId: 'r1', owner: 'ops', epoch: 9 });
    assert.equal(seized.previousOwner, 'worker-1');
  });

  it('refuses a turn that is gone, ended, waiting at a waitpoint, or without a run in progress, before raising any epoch', async () => {
    const cases: [ReturnType<typeof aTurn> | null, ReturnType<typeof aRun> | null, Parameters<typeof domainError>[0]][] = [
      [null, aRun(), 'not_found'],
      [aTurn({ status: 'completed' }), aRun(), 'state_conflict'],
      [aTurn({ status: 'requires_action' }), aRun(), 'state_conflict'],
      [aTurn(), aRun({ status: 'interrupted' }), 'state_conflict'],
      [aTurn({ currentRunId: null }), null, 'state_conflict'],
    ];
    for (const [turn, run, code] of cases) {
      const { sut, runs } = seizing(turn as never, run as never);
      await assert.rejects(sut.seize('t1', 'ops'), domainError(code), `${turn?.status} ${run?.status}`);
      assert.equal(runs.nextEpoch.mock.callCount(), 0);
    }
  });

  it('refuses when the run ended between the read and the seize', async () => {
    const { sut, runs } = seizing();
    runs.seizeRun.mock.mockImplementation(async () => null);
    await assert.rejects(sut.seize('t1', 'ops'), domainError('state_conflict'));
  });

  const seized: Seized = { turn: aTurn(), run: aRun({ leaseOwner: 'ops', epoch: 9 }), lease: aLease({ owner: 'ops', epoch: 9 }), previousOwner: 'worker-1' };
  const error: PublicError = { code: 'operator_failed', message: 'stuck' };

  it('fails the seized turn under the operator\'s lease, pauses what waits behind it and wakes the queue', async () => {
    const { sut, sessions, runs, writer } = seizing();
    sessions.lock.mock.mockImplementation(async () => aSession({ pendingInputCount: 2 }));
    runs.lockHeldRun.mock.mockImplementation(async () => true);
    writer.endRun.mock.mockImplementation(async () => ended('failed'));
    const settled = await sut.failSeized(seized, null, error);
    assert.deepEqual(runs.lockHeldRun.mock.calls[0]!.arguments[1], seized.lease);
    const [, , , lease, status, given] = writer.endRun.mock.calls[0]!.arguments;
    assert.deepEqual([lease, status, given], [seized.lease, 'failed', error]);
    assert.deepEqual(sessions.setQueuePaused.mock.calls[0]!.arguments.slice(1), ['s1', true]);
    assert.deepEqual(settled?.nudges, [{ kind: 'queue' }]);
    assert.equal(settled?.pendingInputs, 2);
  });

  it('writes nothing when the operator\'s lease is gone (another operator, or RUN_LEASE_MS passed)', async () => {
    const { sut, runs, writer, sessions } = seizing();
    runs.lockHeldRun.mock.mockImplementation(async () => false);
    assert.equal(await sut.failSeized(seized, new Map(), error), null);
    assert.equal(writer.closeShown.mock.callCount(), 0);
    assert.equal(writer.endRun.mock.callCount(), 0);
    assert.equal(sessions.setQueuePaused.mock.callCount(), 0);
  });
});
