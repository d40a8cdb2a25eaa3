import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { EventOutbox, EventPublisher } from '#libs/events';
import { AfterCommit, CooperationWaits, IdempotencyService, InputsRepository, type Interrupted, RunRecovery, RunsRepository } from '#libs/engine';
import { SessionDispatcher } from '#libs/queue';
import { AttachmentPreparer, ExpiredRowsCleanup, LeaseTakeovers, PreparationResumption, RecoveryService, WaitingWorkNudges } from '#libs/runtime';
import { aBatch, aRun } from './support/aggregate-fixtures.js';
import { automock, Mocks, newTestService, quietNestLogger, type Token } from './support/new-test-service.js';

// The recovery sweep (RecoveryService.sweep over its parts: LeaseTakeovers, WaitingWorkNudges,
// PreparationResumption, ExpiredRowsCleanup): what it finds in Postgres and what it asks of the
// lifecycle and the dispatcher for each, with nothing found by default. The parts are real, built
// over one set of mocks, so a dependency two parts share (the dispatcher) is one mock.

function sweeper() {
  const tokens: Token[] = [AppConfig, RunsRepository, InputsRepository, CooperationWaits, SessionDispatcher, AttachmentPreparer, RunRecovery, AfterCommit, EventPublisher, IdempotencyService, EventOutbox];
  const shared = new Map<unknown, unknown>(tokens.map((token) => [token, automock(token.name, token)]));
  const mocks = new Mocks(shared, []);
  const part = <S>(Part: new (...args: never[]) => S): [unknown, S] => [Part, newTestService(Part, shared).sut];
  const { sut } = newTestService(RecoveryService, [part(LeaseTakeovers), part(WaitingWorkNudges), part(PreparationResumption), part(ExpiredRowsCleanup)]);
  Object.assign(mocks.get(AppConfig), { recoveryGraceMs: 10_000, eventsReplayTtlSeconds: 3600 });
  const runs = mocks.get(RunsRepository);
  const inputs = mocks.get(InputsRepository);
  const cooperation = mocks.get(CooperationWaits);
  const dispatcher = mocks.get(SessionDispatcher);
  const preparer = mocks.get(AttachmentPreparer);
  runs.expiredRuns.mock.mockImplementation(async () => []);
  runs.sessionsAwaitingTakeover.mock.mockImplementation(async () => []);
  cooperation.undelivered.mock.mockImplementation(async () => []);
  cooperation.queuedHeads.mock.mockImplementation(async () => []);
  inputs.sessionsWithWaitingInputs.mock.mockImplementation(async () => []);
  inputs.takeDuePreparations.mock.mockImplementation(async () => []);
  preparer.running = 0;
  mocks.get(IdempotencyService).deleteExpired.mock.mockImplementation(async () => 0);
  mocks.get(EventOutbox).prune.mock.mockImplementation(async () => 0);
  return { sut, mocks, runs, inputs, cooperation, dispatcher, preparer, recovery: mocks.get(RunRecovery), afterCommit: mocks.get(AfterCommit), publisher: mocks.get(EventPublisher) };
}

describe('the recovery sweep (RecoveryService.sweep)', () => {
  quietNestLogger();
  it('with nothing expired, waiting or due, asks nothing of the lifecycle or the dispatcher', async () => {
    const { sut, recovery, dispatcher, afterCommit } = sweeper();
    assert.deepEqual(await sut.sweep(), { interruptedRuns: 0, takeoversNudged: 0, redispatched: 0, receiptsDeleted: 0, eventsPruned: 0, preparationsResumed: 0 });
    assert.equal(recovery.interruptExpired.mock.callCount(), 0);
    assert.equal(afterCommit.send.mock.callCount(), 0);
    assert.equal(dispatcher.enqueueQuietly.mock.callCount() + dispatcher.nudgeTakeover.mock.callCount() + dispatcher.nudgeQueuedMember.mock.callCount(), 0);
  });

  it('interrupts each expired run with what its stream showed, and carries out what each interrupt committed', async () => {
    const { sut, runs, recovery, publisher, afterCommit } = sweeper();
    const shown = new Map([['item-1', { outputIndex: 0, text: 'Hi' }]]);
    const interrupted: Interrupted = { batch: aBatch(), nudges: [{ kind: 'takeover', runId: 'r2' }], awaiting: 'r2' };
    runs.expiredRuns.mock.mockImplementation(async () => [aRun(), aRun({ id: 'r3', sessionId: 's3' })]);
    publisher.shownText.mock.mockImplementation(async (sessionId) => (sessionId === 's1' ? shown : Promise.reject(new Error('redis down'))));
    // The second run's heartbeat renewed in time: nothing committed, nothing to carry out.
    recovery.interruptExpired.mock.mockImplementation(async (run) => (run.id === 'r1' ? interrupted : null));
    const report = await sut.sweep();
    assert.deepEqual(recovery.interruptExpired.mock.calls.map((c) => c.arguments[1]), [shown, null], 'the stream unreadable: null, clients are told to resync');
    assert.deepEqual(afterCommit.send.mock.calls.map((c) => c.arguments[0]), [interrupted]);
    assert.equal(report.interruptedRuns, 1);
  });

  it('nudges again the takeovers, the idle queues with waiting inputs (always a queue job, never a linger wake-up) and the trees\' queued heads it finds; a failed nudge stops nothing', async () => {
    const { sut, runs, inputs, cooperation, dispatcher } = sweeper();
    runs.sessionsAwaitingTakeover.mock.mockImplementation(async () => [
      { sessionId: 's1', runId: 'r1' },
      { sessionId: 's2', runId: 'r2' },
    ]);
    dispatcher.nudgeTakeover.mock.mockImplementationOnce(async () => {
      throw new Error('redis down');
    });
    inputs.sessionsWithWaitingInputs.mock.mockImplementation(async () => ['s4']);
    cooperation.queuedHeads.mock.mockImplementation(async () => ['m1']);
    const report = await sut.sweep();
    assert.deepEqual(dispatcher.nudgeTakeover.mock.calls.map((c) => c.arguments), [['s1', 'r1'], ['s2', 'r2']]);
    assert.deepEqual(dispatcher.enqueueQuietly.mock.calls.map((c) => c.arguments[0]), ['s4']);
    assert.deepEqual(dispatcher.nudgeQueuedMember.mock.calls.map((c) => c.arguments[0]), ['m1']);
    assert.deepEqual([report.takeoversNudged, report.redispatched], [2, 1]);
  });

  it('delivers members\' ended turns whose delivery was lost, and carries out each delivery that committed', async () => {
    const { sut, cooperation, afterCommit } = sweeper();
    const delivered = { batch: aBatch('p1'), nudges: [] };
    cooperation.undelivered.mock.mockImplementation(async () => ['p1', 'p2', 'p3']);
    cooperation.deliver.mock.mockImplementation(async (parentId) => {
      if (parentId === 'p2') throw new Error('deadlock');
      return parentId === 'p1' ? delivered : null;
    });
    await sut.sweep();
    assert.deepEqual(cooperation.deliver.mock.calls.map((c) => c.arguments[0]), ['p1', 'p2', 'p3']);
    assert.deepEqual(afterCommit.send.mock.calls.map((c) => c.arguments[0]), [delivered]);
  });

  it('resumes due preparations only up to the room this process has, without waiting for them', async () => {
    const { sut, inputs, preparer } = sweeper();
    preparer.running = 15;
    inputs.takeDuePreparations.mock.mockImplementation(async () => ['i1']);
    preparer.prepare.mock.mockImplementation(() => new Promise<void>(() => undefined));
    assert.equal((await sut.sweep()).preparationsResumed, 1);
    assert.deepEqual(inputs.takeDuePreparations.mock.calls[0]!.arguments, [1]);
    assert.deepEqual(preparer.prepare.mock.calls[0]!.arguments, ['i1']);
    preparer.running = 16;
    assert.equal((await sut.sweep()).preparationsResumed, 0);
    assert.equal(inputs.takeDuePreparations.mock.callCount(), 1, 'a full process takes none');
  });

  it('deletes expired receipts and old outbox rows in batches until a batch comes back short, and at most 20 batches a sweep', async () => {
    const { sut, mocks } = sweeper();
    const receipts = [5_000, 5_000, 3];
    mocks.get(IdempotencyService).deleteExpired.mock.mockImplementation(async () => receipts.shift() ?? 0);
    mocks.get(EventOutbox).prune.mock.mockImplementation(async () => 5_000);
    const report = await sut.sweep();
    assert.equal(report.receiptsDeleted, 10_003);
    assert.equal(mocks.get(IdempotencyService).deleteExpired.mock.callCount(), 3);
    assert.equal(report.eventsPruned, 100_000);
    assert.deepEqual(mocks.get(EventOutbox).prune.mock.calls[0]!.arguments, [3600, 5_000]);
  });
});
