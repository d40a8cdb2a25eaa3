import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { InputsRepository } from '#libs/inputs';
import { TurnClaims } from '#libs/lifecycle';
import { SessionsRepository } from '#libs/sessions';
import { ItemsRepository, RunsRepository, StepsRepository, TurnsRepository } from '#libs/turns';
import { aRun, aSession, aTurn } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// A worker's takeover of a run that waits for one (after a crash, a release, or the recovery
// sweep's interrupt): the claim leases the active turn's unleased run instead of the queue's head.

describe('a worker takes over a run that waits for one (TurnClaims.claim)', () => {
  function claims() {
    const service = newTestService(TurnClaims);
    Object.assign(service.mocks.get(AppConfig), { maxActiveTurnsPerOwner: 0, runLeaseMs: 30_000 });
    const sessions = service.mocks.get(SessionsRepository);
    const turns = service.mocks.get(TurnsRepository);
    const runs = service.mocks.get(RunsRepository);
    const activeSummary = { id: 't1', status: 'in_progress', current_run_id: 'r2', result_run_id: null, waitpoint: null };
    sessions.lockForClaim.mock.mockImplementation(async () => ({ session: aSession({ currentTurn: activeSummary, trustedTools: ['add'] }), accountId: 'owner-1' }));
    turns.activeTurn.mock.mockImplementation(async () => aTurn({ currentRunId: 'r2' }));
    return { ...service, sessions, turns, runs };
  }

  it('leases the active turn\'s unleased run and resumes from its committed steps, claiming no input', async () => {
    const { sut, mocks, runs } = claims();
    const run = aRun({ id: 'r2', leaseOwner: 'worker-2', epoch: 5, config: { model: 'gpt-test' } });
    const steps = [{ runId: 'r1', kind: 'model_call' as const, status: 'completed' as const, ref: null, output: {} }];
    runs.takeOver.mock.mockImplementation(async () => run);
    mocks.get(InputsRepository).lastConsumedSeq.mock.mockImplementation(async () => '4');
    mocks.get(ItemsRepository).countItems.mock.mockImplementation(async () => 3);
    mocks.get(StepsRepository).stepsSinceLastInput.mock.mockImplementation(async () => steps);
    const held = await sut.claim('s1', 'r-new', 'worker-2');
    assert.deepEqual(runs.takeOver.mock.calls[0]!.arguments.slice(1), ['s1', 'worker-2', 30_000]);
    assert.deepEqual(held?.lease, { runId: 'r2', owner: 'worker-2', epoch: 5 });
    assert.deepEqual([held?.fresh, held?.lastInputSeq, held?.outputIndex, held?.steps, held?.trustedTools], [false, '4', 3, steps, ['add']]);
    assert.equal(mocks.get(InputsRepository).head.mock.callCount(), 0);
    assert.equal(mocks.get(TurnsRepository).startTurn.mock.callCount(), 0);
  });

  it('claims nothing while the active turn\'s run is held by a live worker (or waits at a waitpoint)', async () => {
    const { sut, mocks, runs } = claims();
    runs.takeOver.mock.mockImplementation(async () => null);
    assert.equal(await sut.claim('s1', 'r-new', 'worker-2'), null);
    assert.equal(mocks.get(InputsRepository).head.mock.callCount(), 0, 'the queue waits behind the active turn');
  });

  it('reads no turn when the locked session\'s overview shows none active, and claims nothing from a paused queue', async () => {
    const { sut, mocks, sessions, turns } = claims();
    sessions.lockForClaim.mock.mockImplementation(async () => ({ session: aSession({ queuePaused: true }), accountId: 'owner-1' }));
    assert.equal(await sut.claim('s1', 'r-new', 'worker-2'), null);
    assert.equal(turns.activeTurn.mock.callCount(), 0);
    assert.equal(mocks.get(RunsRepository).takeOver.mock.callCount(), 0);
    assert.equal(mocks.get(InputsRepository).head.mock.callCount(), 0);
  });
});
