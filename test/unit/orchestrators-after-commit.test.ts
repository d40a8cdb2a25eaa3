import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventOutbox } from '#libs/events';
import { AfterCommit, type Committed, CooperationWaits, InputsRepository } from '#libs/engine';
import { AttachmentJobs, RunSignals, SessionDispatcher } from '#libs/queue';
import { aBatch } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// The one after-commit path (AfterCommit.send): what a committed transition asks of the worker side,
// in which order, and that nothing it fails to do throws (the relay and the sweep do it again).
function afterCommit() {
  const service = newTestService(AfterCommit);
  const { mocks } = service;
  const order: string[] = [];
  const dispatcher = mocks.get(SessionDispatcher);
  const cooperation = mocks.get(CooperationWaits);
  mocks.get(AttachmentJobs).prepareQuietly.mock.mockImplementation(async (inputId) => void order.push(`prepare ${inputId}`));
  mocks.get(EventOutbox).flush.mock.mockImplementation(async (sessionId) => (order.push(`publish ${sessionId}`), { complete: true }) as never);
  dispatcher.nudgeQuietly.mock.mockImplementation(async (sessionId) => void order.push(`queue ${sessionId}`));
  dispatcher.nudgeTakeover.mock.mockImplementation(async (_sessionId, runId) => void order.push(`takeover ${runId}`));
  dispatcher.nudgeQueuedMember.mock.mockImplementation(async (sessionId) => void order.push(`member ${sessionId}`));
  mocks.get(RunSignals).requestCancel.mock.mockImplementation(async (runId) => void order.push(`cancel ${runId}`));
  mocks.get(RunSignals).announceSteer.mock.mockImplementation(async (sessionId) => void order.push(`steer ${sessionId}`));
  cooperation.deliver.mock.mockImplementation(async () => null);
  cooperation.queuedMembers.mock.mockImplementation(async () => []);
  mocks.get(InputsRepository).accountSessionsWithWaitingInputs.mock.mockImplementation(async () => []);
  return { ...service, order, dispatcher, cooperation };
}

describe('after commit (AfterCommit.send)', () => {
  it('queues a preparation first, publishes the batch, then nudges the queue, a takeover, a cancel and a steer, each as asked', async () => {
    const { sut, order } = afterCommit();
    const committed: Committed = {
      batch: aBatch('s1'),
      nudges: [{ kind: 'cancel', runId: 'r1' }, { kind: 'queue' }, { kind: 'prepare', inputId: 'i1' }, { kind: 'queue', sessionId: 's2' }, { kind: 'takeover', runId: 'r2' }, { kind: 'steer' }],
    };
    assert.deepEqual(await sut.send(committed), { complete: true });
    assert.deepEqual(order, ['prepare i1', 'publish s1', 'cancel r1', 'queue s1', 'queue s2', 'takeover r2', 'steer s1']);
  });

  it('sends what the transaction committed on other sessions after its own, and a member\'s delivery to its parent last', async () => {
    const { sut, order, cooperation } = afterCommit();
    const delivered: Committed = { batch: aBatch('p1'), nudges: [{ kind: 'takeover', runId: 'pr2' }] };
    cooperation.deliver.mock.mockImplementation(async (parentId) => (order.push(`deliver ${parentId}`), delivered));
    await sut.send({
      batch: aBatch('s1'),
      nudges: [{ kind: 'cooperation', parentSessionId: 'p1' }, { kind: 'queue' }],
      also: [{ batch: aBatch('m1'), nudges: [{ kind: 'queue' }] }],
    });
    assert.deepEqual(order, ['publish s1', 'queue s1', 'publish m1', 'queue m1', 'deliver p1', 'publish p1', 'takeover pr2']);
  });

  it('a freed slot nudges the account\'s waiting sessions and the tree\'s queued members', async () => {
    const { sut, order, mocks, cooperation } = afterCommit();
    mocks.get(InputsRepository).accountSessionsWithWaitingInputs.mock.mockImplementation(async () => ['a1', 'a2']);
    cooperation.queuedMembers.mock.mockImplementation(async () => ['m3']);
    await sut.send({ batch: aBatch('s1'), nudges: [{ kind: 'account', accountId: 'acct-1' }, { kind: 'tree', rootSessionId: 'root' }] });
    assert.deepEqual(order, ['publish s1', 'queue a1', 'queue a2', 'member m3']);
    assert.equal(mocks.get(InputsRepository).accountSessionsWithWaitingInputs.mock.calls[0]!.arguments[0], 'acct-1');
    assert.equal(cooperation.queuedMembers.mock.calls[0]!.arguments[0], 'root');
  });

  it('never throws for what it could not do after commit: a lost takeover nudge, cancel signal, delivery or lookup', async () => {
    const { sut, order, mocks, dispatcher, cooperation } = afterCommit();
    const down = async (): Promise<never> => {
      throw new Error('redis down');
    };
    dispatcher.nudgeTakeover.mock.mockImplementation(down);
    mocks.get(RunSignals).requestCancel.mock.mockImplementation(down);
    cooperation.deliver.mock.mockImplementation(down);
    cooperation.queuedMembers.mock.mockImplementation(down);
    mocks.get(InputsRepository).accountSessionsWithWaitingInputs.mock.mockImplementation(down);
    await sut.send({
      batch: aBatch('s1'),
      nudges: [
        { kind: 'takeover', runId: 'r2' },
        { kind: 'cancel', runId: 'r1' },
        { kind: 'cooperation', parentSessionId: 'p1' },
        { kind: 'account', accountId: 'acct-1' },
        { kind: 'tree', rootSessionId: 'root' },
        { kind: 'queue' },
      ],
    });
    assert.deepEqual(order, ['publish s1', 'queue s1']);
  });
});
