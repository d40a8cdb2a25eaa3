import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { InputsRepository } from '#libs/inputs';
import { TurnTakeovers } from '#libs/lifecycle';
import { ItemsRepository, RunsRepository, StepsRepository } from '#libs/turns';
import { aRun, aTurn } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// A worker's takeover of a run that waits for one (after a crash, a release, or the recovery
// sweep's interrupt): the claim leases the active turn's unleased run instead of the queue's head.

describe('a worker takes over a run that waits for one (TurnTakeovers.takeOver)', () => {
  function takeovers() {
    const service = newTestService(TurnTakeovers);
    Object.assign(service.mocks.get(AppConfig), { runLeaseMs: 30_000 });
    return { ...service, runs: service.mocks.get(RunsRepository) };
  }
  const manager = {} as never;

  it('leases the active turn\'s unleased run and resumes from its committed steps, claiming no input', async () => {
    const { sut, mocks, runs } = takeovers();
    const run = aRun({ id: 'r2', leaseOwner: 'worker-2', epoch: 5, config: { model: 'gpt-test' } });
    const steps = [{ runId: 'r1', kind: 'model_call' as const, status: 'completed' as const, ref: null, output: {} }];
    runs.takeOver.mock.mockImplementation(async () => run);
    mocks.get(InputsRepository).lastConsumedSeq.mock.mockImplementation(async () => '4');
    mocks.get(ItemsRepository).countItems.mock.mockImplementation(async () => 3);
    mocks.get(StepsRepository).stepsSinceLastInput.mock.mockImplementation(async () => steps);
    const held = await sut.takeOver(manager, aTurn({ currentRunId: 'r2', sessionId: 's1' }), 'worker-2', ['add']);
    assert.deepEqual(runs.takeOver.mock.calls[0]!.arguments.slice(1), ['s1', 'worker-2', 30_000]);
    assert.deepEqual(held?.lease, { runId: 'r2', owner: 'worker-2', epoch: 5 });
    assert.deepEqual([held?.fresh, held?.lastInputSeq, held?.outputIndex, held?.steps, held?.trustedTools], [false, '4', 3, steps, ['add']]);
    assert.deepEqual(held?.batch.rows, [], 'a takeover announces nothing');
  });

  it('takes nothing while the active turn\'s run is held by a live worker (or waits at a waitpoint)', async () => {
    const { sut, mocks, runs } = takeovers();
    runs.takeOver.mock.mockImplementation(async () => null);
    assert.equal(await sut.takeOver(manager, aTurn({ currentRunId: 'r2', sessionId: 's1' }), 'worker-2', []), null);
    assert.equal(mocks.get(InputsRepository).lastConsumedSeq.mock.callCount(), 0, 'nothing read for a run it does not hold');
  });
});
