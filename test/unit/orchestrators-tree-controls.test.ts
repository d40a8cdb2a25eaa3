import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityManager } from 'typeorm';
import { EventOutbox } from '#libs/events';
import { SessionControls, type SessionEntity, SessionsRepository, TreeControls, TreeRepository, type TurnEntity, TurnsRepository } from '#libs/engine';
import { aBatch, aCallsWaitpoint, aSession, aTurn, aWaitingTurn, domainError, typesOf } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// Tree-wide controls (TreeControls): stop cancels every active turn of a cooperation tree — the
// running ones asked first, then the waiting ones ended — and pauses every queue; continue resumes
// them once nothing of the tree is active. What each asks per session, and what it commits where.
const manager = {} as EntityManager;
const root = aSession({ id: 'root', rootSessionId: 'root' });
const member = (id: string, over: Partial<SessionEntity> = {}) => aSession({ id, rootSessionId: 'root', parentSessionId: 'root', depth: 1, ...over });

function treeControls(actives: Record<string, TurnEntity>) {
  const service = newTestService(TreeControls);
  const { mocks } = service;
  const controls = mocks.get(SessionControls);
  const order: string[] = [];
  mocks.get(TurnsRepository).activeTurn.mock.mockImplementation(async (_m, sessionId) => actives[sessionId] ?? null);
  controls.cancelTurn.mock.mockImplementation(async (_m, session, target) => {
    order.push(`cancel ${session.id}`);
    const active = actives[session.id]!;
    const ended = active.waitpoint !== null;
    return {
      turn: { ...active, id: target.turnId!, status: ended ? 'cancelled' : active.status, cancellationPending: !ended },
      runId: active.currentRunId,
      events: ended ? [{ type: 'agent.session.turn.cancelled' } as never] : [],
      nudges: ended ? [{ kind: 'cooperation' as const, parentSessionId: 'root' }] : [],
    };
  });
  mocks.get(EventOutbox).append.mock.mockImplementation(async (_m, sessionId) => aBatch(sessionId));
  return { ...service, controls, order, sessions: mocks.get(SessionsRepository), tree: mocks.get(TreeRepository), outbox: mocks.get(EventOutbox) };
}

describe('stopping and continuing a tree (TreeControls)', () => {
  it('locks the root, then each level of members until one is empty', async () => {
    const { sut, sessions, tree } = treeControls({});
    sessions.lock.mock.mockImplementation(async () => root);
    tree.lockLevel.mock.mockImplementation(async (_m, _root, depth) => (depth === 1 ? [member('m1'), member('m2')] : depth === 2 ? [member('m3', { depth: 2 })] : []));
    const locked = await sut.lock(manager, member('m3', { depth: 2 }));
    assert.equal(sessions.lock.mock.calls[0]!.arguments[1], 'root');
    assert.deepEqual(tree.lockLevel.mock.calls.map((c) => c.arguments[2]), [1, 2, 3]);
    assert.deepEqual(locked.sessions.map((s) => s.id), ['root', 'm1', 'm2', 'm3']);
    sessions.lock.mock.mockImplementation(async () => null);
    await assert.rejects(sut.lock(manager, member('m1')), domainError('not_found'));
  });

  it('stop asks the running turns to cancel first, then ends the waiting ones, pauses every queue and marks the tree stopped', async () => {
    const actives = { root: aWaitingTurn(aCallsWaitpoint('cooperation', []), { id: 'rt' }), m1: aTurn({ id: 't1', sessionId: 'm1', currentRunId: 'r1' }) };
    const { sut, order, sessions, tree, outbox } = treeControls(actives);
    const paused = member('m2', { queuePaused: true });
    const committed = await sut.stop(manager, { root, sessions: [root, member('m1'), paused] });
    assert.deepEqual(order, ['cancel m1', 'cancel root'], 'running turns are asked before waiting ones end');
    assert.deepEqual(sessions.setQueuePaused.mock.calls.map((c) => c.arguments[1]), ['root', 'm1'], 'a paused queue is left as it is');
    assert.deepEqual(tree.setStopped.mock.calls[0]!.arguments.slice(1), ['root', true]);
    assert.deepEqual(outbox.append.mock.calls.map((c) => [c.arguments[1], typesOf(c.arguments[2])]), [
      ['root', ['yuxi.session.turn.state', 'agent.session.turn.cancelled']],
      ['m1', ['yuxi.session.turn.state']],
    ]);
    assert.deepEqual(committed.map((c) => c.nudges), [[{ kind: 'cooperation', parentSessionId: 'root' }], [{ kind: 'cancel', runId: 'r1' }]]);
  });

  it('stop asks nothing of a turn already being cancelled, and commits nothing on a session with nothing to announce', async () => {
    const { sut, controls, outbox } = treeControls({ m1: aTurn({ sessionId: 'm1', cancellationPending: true }) });
    const committed = await sut.stop(manager, { root, sessions: [root, member('m1', { queuePaused: true })] });
    assert.equal(controls.cancelTurn.mock.callCount(), 0);
    assert.deepEqual([committed, outbox.append.mock.callCount()], [[], 0]);
  });

  it('continue is refused while the tree is not stopped or any of its turns is still active, changing nothing', async () => {
    const settling = treeControls({ m1: aTurn({ id: 't1', sessionId: 'm1', cancellationPending: true }) });
    await assert.rejects(settling.sut.continue(manager, { root: { ...root, treeStoppedAt: new Date() }, sessions: [root, member('m1')] }), domainError('state_conflict', { active_turns: ['t1'] }));
    const running = treeControls({});
    await assert.rejects(running.sut.continue(manager, { root, sessions: [root] }), domainError('state_conflict'));
    assert.equal(settling.tree.setStopped.mock.callCount() + running.tree.setStopped.mock.callCount(), 0);
  });

  it('continue resumes the paused queues and nudges those with inputs waiting', async () => {
    const { sut, sessions, tree } = treeControls({});
    const stopped = { ...root, treeStoppedAt: new Date(), queuePaused: true };
    const committed = await sut.continue(manager, { root: stopped, sessions: [stopped, member('m1', { queuePaused: true, pendingInputCount: 2 }), member('m2')] });
    assert.deepEqual(tree.setStopped.mock.calls[0]!.arguments.slice(1), ['root', false]);
    assert.deepEqual(sessions.setQueuePaused.mock.calls.map((c) => c.arguments.slice(1)), [['root', false], ['m1', false]]);
    assert.deepEqual(committed.map((c) => [c.batch.sessionId, c.nudges]), [['m1', [{ kind: 'queue' }]]]);
  });
});
