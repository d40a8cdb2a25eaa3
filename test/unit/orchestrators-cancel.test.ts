import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import type { EnvironmentConfig } from '#libs/environments';
import { CooperationWaits, type IdempotentResponse, InputsRepository, ItemsRepository, type Nudge, SessionControls, SessionsRepository, TurnsRepository } from '#libs/engine';
import { Acceptance, type ControlOutcome } from '../../libs/protocol/src/use-cases/acceptance.js';
import { CancelTurn } from '../../libs/protocol/src/use-cases/queue-controls.use-case.js';
import { aRun, aSession, aTurn, aWaitingTurn, aWaitpoint, domainError, typesOf } from './support/aggregate-fixtures.js';
import { newTestService, quietNestLogger } from './support/new-test-service.js';

// Cancelling a turn, decided under the session lock (SessionControls.cancelTurn) and accepted as a
// client's event (CancelTurn): what each case asks of the repositories, and what it announces.
const manager = {} as EntityManager;

function controls() {
  const service = newTestService(SessionControls);
  const turns = service.mocks.get(TurnsRepository);
  const sessions = service.mocks.get(SessionsRepository);
  const cooperation = service.mocks.get(CooperationWaits);
  return { ...service, turns, sessions, cooperation };
}

describe('cancelling a turn (SessionControls.cancelTurn)', () => {
  quietNestLogger();
  it('refuses when no turn is named and none is active, writing nothing', async () => {
    const { sut, turns, sessions } = controls();
    turns.activeTurn.mock.mockImplementation(async () => null);
    await assert.rejects(sut.cancelTurn(manager, aSession(), {}), domainError('state_conflict'));
    assert.equal(turns.requestCancel.mock.callCount(), 0);
    assert.equal(sessions.setQueuePaused.mock.callCount(), 0);
  });

  it('asks the running turn to cancel and pauses what waits behind it; the worker settles it', async () => {
    const { sut, turns, sessions, cooperation } = controls();
    const pending = aTurn({ cancellationPending: true });
    turns.activeTurn.mock.mockImplementation(async () => aTurn());
    turns.findTurn.mock.mockImplementation(async () => aTurn());
    turns.requestCancel.mock.mockImplementation(async () => pending);
    const result = await sut.cancelTurn(manager, aSession({ pendingInputCount: 2 }), {});
    assert.deepEqual(turns.requestCancel.mock.calls[0]!.arguments, [manager, 's1', 't1']);
    assert.deepEqual(sessions.setQueuePaused.mock.calls[0]!.arguments, [manager, 's1', true]);
    assert.deepEqual(result, { turn: pending, runId: 'r1', events: [], nudges: [] });
    assert.equal(turns.cancelWaitingTurn.mock.callCount(), 0, 'a running turn is not ended here');
    assert.equal(cooperation.memberTurnEnded.mock.callCount(), 0);
  });

  it('leaves an empty queue unpaused, and targets the turn named rather than reading the active one', async () => {
    const { sut, turns, sessions } = controls();
    turns.findTurn.mock.mockImplementation(async () => aTurn({ id: 't7' }));
    turns.requestCancel.mock.mockImplementation(async () => aTurn({ id: 't7', cancellationPending: true }));
    await sut.cancelTurn(manager, aSession(), { turnId: 't7' });
    assert.equal(turns.activeTurn.mock.callCount(), 0);
    assert.equal(turns.requestCancel.mock.calls[0]!.arguments[2], 't7');
    assert.equal(sessions.setQueuePaused.mock.callCount(), 0);
  });

  it('answers not_found for a turn of another session, and state_conflict for one that already ended', async () => {
    const { sut, turns } = controls();
    turns.requestCancel.mock.mockImplementation(async () => null);
    turns.findTurn.mock.mockImplementation(async () => aTurn({ sessionId: 'other' }));
    await assert.rejects(sut.cancelTurn(manager, aSession(), { turnId: 't1' }), domainError('not_found'));
    turns.findTurn.mock.mockImplementation(async () => aTurn({ status: 'completed' }));
    await assert.rejects(sut.cancelTurn(manager, aSession(), { turnId: 't1' }), domainError('state_conflict'));
  });

  it('refuses when expected_run_id is not the turn\'s current run (the transaction rolls the request back)', async () => {
    const { sut, turns, sessions } = controls();
    turns.findTurn.mock.mockImplementation(async () => aTurn());
    turns.requestCancel.mock.mockImplementation(async () => aTurn({ currentRunId: 'r2', cancellationPending: true }));
    await assert.rejects(sut.cancelTurn(manager, aSession({ pendingInputCount: 1 }), { turnId: 't1', expectedRunId: 'r1' }), domainError('state_conflict', { current_run_id: 'r2' }));
    assert.equal(sessions.setQueuePaused.mock.callCount(), 0);
  });

  it('ends a turn waiting at a waitpoint at once: cancelled run and turn announced, overview moved, queue paused, parent told', async () => {
    const { sut, turns, sessions, cooperation } = controls();
    const waiting = aWaitingTurn(aWaitpoint());
    const ended = { turn: { ...waiting, status: 'cancelled' as const, waitpoint: null }, run: aRun({ status: 'cancelled' }) };
    const parentNudges: Nudge[] = [{ kind: 'cooperation', parentSessionId: 'p1' }];
    turns.findTurn.mock.mockImplementation(async () => waiting);
    turns.cancelWaitingTurn.mock.mockImplementation(async () => ended);
    cooperation.memberTurnEnded.mock.mockImplementation(async () => parentNudges);
    const session = aSession({ pendingInputCount: 1, depth: 1 });
    const result = await sut.cancelTurn(manager, session, { turnId: 't1', expectedRunId: 'r1' });
    assert.equal(turns.requestCancel.mock.callCount(), 0);
    assert.equal(sessions.recordTurnUpdated.mock.calls[0]!.arguments[2].status, 'cancelled');
    assert.deepEqual(sessions.setQueuePaused.mock.calls[0]!.arguments, [manager, 's1', true]);
    assert.deepEqual(cooperation.memberTurnEnded.mock.calls[0]!.arguments, [manager, session, ended.turn]);
    assert.deepEqual(typesOf(result.events), ['yuxi.session.run.cancelled', 'agent.session.turn.cancelled']);
    assert.deepEqual(result.nudges, parentNudges);
    assert.equal(result.runId, 'r1');
  });

  it('ends, with a waiting turn of a session with an environment, the commands that waited for approval (done first); a session without one asks nothing', async () => {
    const { sut, turns, mocks } = controls();
    const waiting = aWaitingTurn(aWaitpoint());
    turns.findTurn.mock.mockImplementation(async () => waiting);
    turns.cancelWaitingTurn.mock.mockImplementation(async () => ({ turn: { ...waiting, status: 'cancelled' as const, waitpoint: null }, run: aRun({ status: 'cancelled' }) }));
    const items = mocks.get(ItemsRepository);
    const command = { id: 'cmd-1', turnId: 't1', runId: 'r1', type: 'command_execution', status: 'incomplete', content: [{ type: 'function_call', call_id: 'c1', command_execution: { command: 'ls', cwd: '/workspace', exit_code: null, output: 'x', duration_ms: null, output_index: 1 } }] };
    items.endRunningCommands.mock.mockImplementation(async () => [command as never]);
    const environment = { type: 'openai_hosted', network: { access: 'disabled' }, env: {}, files: [], setup_commands: [], limits: {} } as unknown as EnvironmentConfig;
    const result = await sut.cancelTurn(manager, aSession({ environment }), { turnId: 't1' });
    assert.match(items.endRunningCommands.mock.calls[0]!.arguments[2], /cancelled before this command ran/);
    assert.deepEqual(typesOf(result.events), ['agent.session.turn.item.done', 'yuxi.session.run.cancelled', 'agent.session.turn.cancelled']);

    const plain = controls();
    plain.turns.findTurn.mock.mockImplementation(async () => waiting);
    plain.turns.cancelWaitingTurn.mock.mockImplementation(async () => ({ turn: { ...waiting, status: 'cancelled' as const, waitpoint: null }, run: null }));
    await plain.sut.cancelTurn(manager, aSession(), { turnId: 't1' });
    assert.equal(plain.mocks.get(ItemsRepository).endRunningCommands.mock.callCount(), 0);
  });

  it('a waiting turn with another current run than expected is refused before anything is written', async () => {
    const { sut, turns } = controls();
    turns.findTurn.mock.mockImplementation(async () => aWaitingTurn(aWaitpoint()));
    await assert.rejects(sut.cancelTurn(manager, aSession(), { turnId: 't1', expectedRunId: 'r9' }), domainError('state_conflict', { current_run_id: 'r1' }));
    assert.equal(turns.cancelWaitingTurn.mock.callCount(), 0);
  });

  it('a waiting turn resumed meanwhile (the conditional cancel matched nothing) is asked to cancel like a running one', async () => {
    const { sut, turns } = controls();
    turns.findTurn.mock.mockImplementation(async () => aWaitingTurn(aWaitpoint()));
    turns.cancelWaitingTurn.mock.mockImplementation(async () => null);
    turns.requestCancel.mock.mockImplementation(async () => aTurn({ cancellationPending: true }));
    const result = await sut.cancelTurn(manager, aSession(), { turnId: 't1' });
    assert.equal(turns.requestCancel.mock.callCount(), 1);
    assert.deepEqual(result.events, []);
  });
});

describe('the queue behind a cancel (SessionControls)', () => {
  quietNestLogger();
  it('continues a paused queue only once no turn is active', async () => {
    const { sut, turns, sessions } = controls();
    await assert.rejects(sut.continueQueue(manager, aSession()), domainError('state_conflict'));
    turns.activeTurn.mock.mockImplementation(async () => aTurn({ cancellationPending: true }));
    await assert.rejects(sut.continueQueue(manager, aSession({ queuePaused: true })), domainError('state_conflict'));
    assert.equal(sessions.setQueuePaused.mock.callCount(), 0);
    turns.activeTurn.mock.mockImplementation(async () => null);
    await sut.continueQueue(manager, aSession({ queuePaused: true }));
    assert.deepEqual(sessions.setQueuePaused.mock.calls[0]!.arguments, [manager, 's1', false]);
  });

  it('a member whose last pending input is cancelled, with no turn, has settled: its coordinator is told', async () => {
    const { sut, mocks, turns, sessions, cooperation } = controls();
    const inputs = mocks.get(InputsRepository);
    inputs.findInSession.mock.mockImplementation(async () => ({ id: 'i1', status: 'pending' }) as never);
    turns.activeTurn.mock.mockImplementation(async () => null);
    const settled: Nudge[] = [{ kind: 'cooperation', parentSessionId: 'p1' }];
    cooperation.memberSettled.mock.mockImplementation(async () => settled);
    const member = aSession({ depth: 1, pendingInputCount: 1 });
    assert.deepEqual(await sut.cancelInput(manager, member, 'i1'), settled);
    assert.equal(inputs.markCancelled.mock.calls[0]!.arguments[1], 'i1');
    assert.equal(sessions.recordInputCancelled.mock.callCount(), 1);
    // A root session, or a member with more to run, tells nobody.
    assert.deepEqual(await sut.cancelInput(manager, aSession({ pendingInputCount: 1 }), 'i1'), []);
    assert.deepEqual(await sut.cancelInput(manager, aSession({ depth: 1, pendingInputCount: 2 }), 'i1'), []);
    assert.equal(cooperation.memberSettled.mock.callCount(), 1);
  });
});

describe('the cancel event (CancelTurn)', () => {
  quietNestLogger();
  const principal = { userId: 'owner-1' } as Principal;

  function cancelTurn(replayed: boolean) {
    const service = newTestService(CancelTurn);
    const acceptance = service.mocks.get(Acceptance);
    const outcomes: ControlOutcome[] = [];
    acceptance.control.mock.mockImplementation(async (_principal, sessionId, _key, _event, apply): Promise<IdempotentResponse> => {
      if (replayed) return { status: 202, body: '', replayed, receipt: { object: 'receipt', session_id: sessionId, input_id: null, turn_id: 't1', run_id: 'r1' } as never, sessionId };
      const outcome = await apply(manager, aSession());
      outcomes.push(outcome);
      return { status: 202, body: '', replayed, receipt: outcome.receipt, sessionId };
    });
    return { ...service, controls: service.mocks.get(SessionControls), outcomes };
  }

  it('fixes the target in the transaction, announces the turn\'s state with the cancel, and asks after commit to stop the run\'s worker', async () => {
    const { sut, controls, outcomes } = cancelTurn(false);
    controls.cancelTurn.mock.mockImplementation(async () => ({ turn: aTurn({ cancellationPending: true }), runId: 'r1', events: [], nudges: [] }));
    const result = await sut.execute(principal, 's1', { type: 'agent.session.input.cancel', yuxi: { turn_id: 't1', expected_run_id: 'r1' } } as never, 'k1');
    assert.deepEqual(controls.cancelTurn.mock.calls[0]!.arguments.slice(1), [aSession(), { turnId: 't1', expectedRunId: 'r1' }]);
    assert.deepEqual(typesOf(outcomes[0]!.events!), ['yuxi.session.turn.state']);
    assert.equal(outcomes[0]!.receipt.turn_id, 't1');
    assert.equal(result.receipt?.run_id, 'r1');
    assert.deepEqual(outcomes[0]!.nudges, [{ kind: 'cancel', runId: 'r1' }]);
  });

  it('a turn ended at its waitpoint carries its terminal events and its parent\'s nudges, and stops no run', async () => {
    const { sut, controls, outcomes } = cancelTurn(false);
    const ended = aTurn({ status: 'cancelled', completedAt: new Date() });
    const nudges: Nudge[] = [{ kind: 'cooperation', parentSessionId: 'p1' }];
    controls.cancelTurn.mock.mockImplementation(async () => ({ turn: ended, runId: null, events: [{ type: 'agent.session.turn.cancelled' } as never], nudges }));
    await sut.execute(principal, 's1', { type: 'agent.session.input.cancel' } as never, 'k1');
    assert.deepEqual(typesOf(outcomes[0]!.events!), ['yuxi.session.turn.state', 'agent.session.turn.cancelled']);
    assert.deepEqual(outcomes[0]!.nudges, nudges, 'no run to stop');
  });

  it('a replayed cancel writes nothing and asks nobody', async () => {
    const { sut, controls, outcomes } = cancelTurn(true);
    await sut.execute(principal, 's1', { type: 'agent.session.input.cancel' } as never, 'k1');
    assert.equal(controls.cancelTurn.mock.callCount(), 0);
    assert.deepEqual(outcomes, []);
  });

  it('the run\'s stop follows what the cancel itself asked (a member\'s parent told first)', async () => {
    const { sut, controls, outcomes } = cancelTurn(false);
    const nudges: Nudge[] = [{ kind: 'cooperation', parentSessionId: 'p1' }];
    controls.cancelTurn.mock.mockImplementation(async () => ({ turn: aTurn({ cancellationPending: true }), runId: 'r3', events: [], nudges }));
    await sut.execute(principal, 's1', { type: 'agent.session.input.cancel' } as never, 'k1');
    assert.deepEqual(outcomes[0]!.nudges, [...nudges, { kind: 'cancel', runId: 'r3' }]);
  });
});
