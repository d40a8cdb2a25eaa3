import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Committed, CooperationTransitions, CooperationWaits, type FrozenInputConfig, type HeldTurn, MemberControls, MemberCreations, type MemberState, RunsRepository, SessionControls, SessionsRepository, StepsRepository, type ToolCallSpec, ToolOutputItems, TreeRepository, TurnsRepository } from '#libs/engine';
import { AppConfig } from '#libs/config';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { DomainError } from '#libs/errors';
import { aBatch, aCallsWaitpoint, aLease, aRun, aSession, aTurn, typesOf } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// A coordinator's calls on its members (CooperationTransitions.perform; the members' side by
// MemberControls and MemberCreations) and its wait for them (CooperationWaits): each one transaction
// under the coordinator's lock, through the run's lease, with the members' side committed in the
// same transaction and carried out after it ("also").
const lease = aLease({ epoch: 4 });
const held = { turn: aTurn(), run: aRun(), lease, config: { model: 'gpt-test', agent: { multi_agent: { enabled: true, max_depth: 0 } } } as unknown as FrozenInputConfig } as HeldTurn;
const call = (name: string, args = '{}'): ToolCallSpec => ({ call_id: 'c1', name, arguments: args });
const member = (over: Partial<MemberState> = {}): MemberState => ({
  id: 'm1',
  name: 'scout',
  agentId: 'agent-1',
  depth: 1,
  parentSessionId: 's1',
  pendingInputCount: 0,
  queuePaused: false,
  activeTurnId: null,
  activeStatus: null,
  waitpointKind: null,
  lastTurnId: 'mt1',
  lastStatus: 'completed',
  errorCode: null,
  answer: 'done',
  ...over,
});

function transitions() {
  const service = newTestService(CooperationTransitions);
  const { mocks } = service;
  const sessions = mocks.get(SessionsRepository);
  const steps = mocks.get(StepsRepository);
  const outbox = mocks.get(EventOutbox);
  sessions.lock.mock.mockImplementation(async (_m, id) => aSession({ id, depth: id === 's1' ? 0 : 1, rootSessionId: 's1', pendingInputCount: 0 }));
  steps.recordStep.mock.mockImplementation(async () => true);
  mocks.get(ToolOutputItems).write.mock.mockImplementation(async () => []);
  outbox.append.mock.mockImplementation(async (_m, sessionId) => aBatch(sessionId));
  return { ...service, sessions, steps, outbox, turns: mocks.get(TurnsRepository), members: mocks.get(MemberControls) };
}

describe('a coordinator\'s call on its members (CooperationTransitions.perform)', () => {
  it('records nothing when the coordinator is gone (null) or a cancel was accepted first (\'cancelled\')', async () => {
    const gone = transitions();
    gone.sessions.lock.mock.mockImplementation(async () => null);
    assert.equal(await gone.sut.perform(held, lease, 3, call('message_subagent'), {}), null);
    const cancelled = transitions();
    cancelled.turns.cancellationPending.mock.mockImplementation(async () => true);
    assert.equal(await cancelled.sut.perform(held, lease, 3, call('message_subagent'), {}), 'cancelled');
    assert.equal(gone.steps.recordStep.mock.callCount() + cancelled.steps.recordStep.mock.callCount(), 0);
    assert.equal(cancelled.members.message.mock.callCount(), 0);
  });

  it('records the call through the lease as a side-effecting step, its output item, and the batch under the lease\'s epoch', async () => {
    const { sut, steps, outbox } = transitions();
    const result = await sut.perform(held, lease, 3, call('summon_subagent'), {});
    const [, through, step] = steps.recordStep.mock.calls[0]!.arguments;
    assert.equal(through, lease);
    assert.deepEqual([step.kind, step.ref, step.input], ['tool_call', 'c1', { name: 'summon_subagent', arguments: '{}', side_effects: true, idempotent: false }]);
    assert.deepEqual(outbox.append.mock.calls.at(-1)!.arguments[3], { epoch: 4 });
    assert.ok(result && result !== 'cancelled');
    assert.deepEqual([result.outputIndex, result.step.output, result.also], [4, { success: false, output: 'Unknown tool summon_subagent' }, []]);
    // A member's refusal is an output like any other: recorded, as a result the model reads.
    const refused = transitions();
    refused.members.message.mock.mockImplementation(async () => ({ success: false, output: 'message_subagent refused: no' }));
    const recorded = await refused.sut.perform(held, lease, 3, call('message_subagent'), { subagent_id: 'm1' });
    assert.ok(recorded && recorded !== 'cancelled');
    assert.deepEqual([refused.steps.recordStep.mock.callCount(), recorded.step.output], [1, { success: false, output: 'message_subagent refused: no' }]);
  });

  it('a lease lost before the step is recorded rolls back the members\' side too, and answers null', async () => {
    const { sut, steps, members, dataSource } = transitions();
    steps.recordStep.mock.mockImplementation(async () => false);
    members.interrupt.mock.mockImplementation(async (_m, _coordinator, _args, also) => {
      also.push({ batch: aBatch('m1'), nudges: [{ kind: 'cancel', runId: 'mr2' }] });
      return { success: true, output: '{"status":"cancelling"}' };
    });
    assert.equal(await sut.perform(held, lease, 3, call('interrupt_subagent'), { subagent_id: 'm1' }), null);
    const [manager, coordinator, args] = members.interrupt.mock.calls[0]!.arguments;
    assert.deepEqual([manager, coordinator.id, args], [dataSource.transactions[0]!.manager, 's1', { subagent_id: 'm1' }], 'the member\'s cancel was written in the transaction...');
    assert.deepEqual(dataSource.transactions.map((t) => t.outcome), ['rolled_back'], '...which rolled back');
  });
});

const coordinator = aSession({ id: 's1', rootSessionId: 's1' });

describe('a coordinator\'s message and interrupt of a member (MemberControls)', () => {
  function memberControls(members: MemberState[] = [member()]) {
    const service = newTestService(MemberControls);
    const { mocks } = service;
    const sessions = mocks.get(SessionsRepository);
    const outbox = mocks.get(EventOutbox);
    sessions.lock.mock.mockImplementation(async (_m, id) => aSession({ id, depth: id === 's1' ? 0 : 1, rootSessionId: 's1', pendingInputCount: 0 }));
    mocks.get(TreeRepository).children.mock.mockImplementation(async () => members);
    outbox.append.mock.mockImplementation(async (_m, sessionId) => aBatch(sessionId));
    return { ...service, sessions, outbox, manager: service.dataSource.manager, turns: mocks.get(TurnsRepository), controls: mocks.get(SessionControls), cooperation: mocks.get(CooperationWaits) };
  }
  const outputOf = (outcome: { output: string }) => JSON.parse(outcome.output) as Record<string, unknown>;

  it('interrupts a running member: cancel requested under its lock, its state announced on its stream, its worker signalled after commit', async () => {
    const { sut, manager, turns, controls, outbox } = memberControls();
    turns.activeTurn.mock.mockImplementation(async () => aTurn({ id: 'mt2', sessionId: 'm1' }));
    controls.cancelTurn.mock.mockImplementation(async () => ({ turn: aTurn({ id: 'mt2', sessionId: 'm1', cancellationPending: true }), runId: 'mr2', events: [], nudges: [] }));
    const also: Committed[] = [];
    const outcome = await sut.interrupt(manager, coordinator, { subagent_id: 'scout' }, also);
    assert.deepEqual(controls.cancelTurn.mock.calls[0]!.arguments[2], { turnId: 'mt2' });
    const [, memberId, events] = outbox.append.mock.calls[0]!.arguments;
    assert.deepEqual([memberId, typesOf(events)], ['m1', ['yuxi.session.turn.state']]);
    assert.deepEqual(also.map((a) => a.nudges), [[{ kind: 'cancel', runId: 'mr2' }]]);
    assert.equal(outputOf(outcome).status, 'cancelling');
  });

  it('a member waiting at a waitpoint ends cancelled at once: its parent is told, no worker to signal', async () => {
    const { sut, manager, turns, controls } = memberControls();
    turns.activeTurn.mock.mockImplementation(async () => aTurn({ id: 'mt2', status: 'requires_action' }));
    const told = [{ kind: 'cooperation' as const, parentSessionId: 's1' }];
    controls.cancelTurn.mock.mockImplementation(async () => ({ turn: aTurn({ id: 'mt2', status: 'cancelled' }), runId: 'mr2', events: [], nudges: told }));
    const also: Committed[] = [];
    const outcome = await sut.interrupt(manager, coordinator, { subagent_id: 'm1' }, also);
    assert.deepEqual(also[0]!.nudges, told);
    assert.equal(outputOf(outcome).status, 'cancelled');
  });

  it('pauses a member that only has queued inputs (it has settled: its parent is told); an idle one is left alone', async () => {
    const queued = memberControls();
    queued.sessions.lock.mock.mockImplementation(async (_m, id) => aSession({ id, depth: id === 's1' ? 0 : 1, pendingInputCount: id === 's1' ? 0 : 2 }));
    const settled = [{ kind: 'cooperation' as const, parentSessionId: 's1' }];
    queued.cooperation.memberSettled.mock.mockImplementation(async () => settled);
    const also: Committed[] = [];
    const paused = await queued.sut.interrupt(queued.manager, coordinator, { subagent_id: 'm1' }, also);
    assert.deepEqual(queued.sessions.setQueuePaused.mock.calls[0]!.arguments.slice(1), ['m1', true]);
    assert.deepEqual([outputOf(paused).status, also[0]!.nudges], ['paused', settled]);
    const idle = memberControls();
    const left = await idle.sut.interrupt(idle.manager, coordinator, { subagent_id: 'm1' }, []);
    assert.equal(outputOf(left).status, 'idle');
    assert.equal(idle.sessions.setQueuePaused.mock.callCount() + idle.controls.cancelTurn.mock.callCount(), 0);
  });

  it('a refused cancel, or a subagent not its own, is the call\'s failed output (not an error: the model reads it)', async () => {
    const refused = memberControls();
    refused.turns.activeTurn.mock.mockImplementation(async () => aTurn({ id: 'mt2' }));
    refused.controls.cancelTurn.mock.mockImplementation(async () => {
      throw new DomainError('state_conflict', 'Turn mt2 has already ended');
    });
    const outcome = await refused.sut.interrupt(refused.manager, coordinator, { subagent_id: 'm1' }, []);
    assert.deepEqual(outcome, { success: false, output: 'interrupt_subagent refused: Turn mt2 has already ended' });
    const foreign = memberControls();
    const also: Committed[] = [];
    const other = await foreign.sut.message(foreign.manager, coordinator, { subagent_id: 'x9', message: 'hi' }, also);
    assert.equal(other.success, false);
    assert.equal(foreign.controls.acceptMessage.mock.callCount(), 0);
    assert.deepEqual(also, []);
  });

  it('messages a member: a follow-up queued on it, announced on its stream, its queue nudged after commit', async () => {
    const { sut, manager, controls, outbox } = memberControls();
    controls.acceptMessage.mock.mockImplementation(async () => ({ input: { id: 'i9' } as never, steersRunningTurn: false, riding: null }));
    const also: Committed[] = [];
    const outcome = await sut.message(manager, coordinator, { subagent_id: 'm1', message: 'go on' }, also);
    const [, ownerId, memberId, spec] = controls.acceptMessage.mock.calls[0]!.arguments;
    assert.deepEqual([ownerId, memberId, spec.requestedMode], ['owner-1', 'm1', 'follow_up']);
    assert.deepEqual(typesOf(outbox.append.mock.calls[0]!.arguments[2]), ['yuxi.session.event.accepted']);
    assert.deepEqual(also[0]!.nudges, [{ kind: 'queue' }]);
    assert.equal(outputOf(outcome).input_id, 'i9');
  });
});

describe('a coordinator\'s create of a member (MemberCreations)', () => {
  it('refuses to create a member beyond the agent\'s max_depth, creating nothing', async () => {
    const { sut, mocks, dataSource } = newTestService(MemberCreations);
    mocks.get(TreeRepository).children.mock.mockImplementation(async () => []);
    const events: OutgoingEvent[] = [];
    const also: Committed[] = [];
    const outcome = await sut.create(dataSource.manager, held, coordinator, call('create_subagent'), { task: 'look' }, new Date(), events, also);
    assert.equal(outcome.success, false);
    assert.match(outcome.output, /cannot spawn subagents/);
    assert.equal(mocks.get(TreeRepository).createMember.mock.callCount(), 0);
    assert.deepEqual([events, also], [[], []]);
  });
});

describe('a coordinator\'s wait for its members (CooperationWaits)', () => {
  function waits(members: MemberState[]) {
    const service = newTestService(CooperationWaits);
    const { mocks } = service;
    Object.assign(mocks.get(AppConfig), { maxActiveTurnsPerOwner: 0 });
    mocks.get(SessionsRepository).lock.mock.mockImplementation(async (_m, id) => aSession({ id }));
    mocks.get(SessionsRepository).recordTurnFreed.mock.mockImplementation(async () => ({ crowdedAccount: null }) as never);
    mocks.get(TreeRepository).children.mock.mockImplementation(async () => members);
    mocks.get(StepsRepository).recordStep.mock.mockImplementation(async () => true);
    mocks.get(RunsRepository).suspendRun.mock.mockImplementation(async () => true);
    mocks.get(RunsRepository).usageOf.mock.mockImplementation(async () => ({ run: null, turn: null }));
    mocks.get(EventOutbox).append.mock.mockImplementation(async (_m, sessionId) => aBatch(sessionId));
    return { ...service, tree: mocks.get(TreeRepository), runs: mocks.get(RunsRepository), steps: mocks.get(StepsRepository), turns: mocks.get(TurnsRepository) };
  }
  const wait = call('wait_subagents', '{"subagent_ids":["m1"]}');

  it('resolves at once when every member waited for has settled: one waitpoint step through the lease, no suspension', async () => {
    const { sut, runs, steps } = waits([member()]);
    const result = await sut.awaitMembers(held, lease, [wait]);
    assert.ok(result && result !== 'cancelled' && 'resolved' in result);
    assert.equal(steps.recordStep.mock.calls[0]!.arguments[1], lease);
    assert.equal(result.resolved.kind, 'waitpoint');
    assert.equal(runs.suspendRun.mock.callCount(), 0);
  });

  it('suspends the run while a member runs: the turn waits at a cooperation waitpoint, announced under the lease\'s epoch', async () => {
    const { sut, runs, steps, mocks } = waits([member({ activeTurnId: 'mt2', activeStatus: 'in_progress' })]);
    const result = await sut.awaitMembers(held, lease, [wait]);
    assert.ok(result && result !== 'cancelled' && 'suspended' in result);
    const [, , events, options] = mocks.get(EventOutbox).append.mock.calls[0]!.arguments;
    assert.deepEqual([typesOf(events), options], [['yuxi.session.run.requires_action', 'yuxi.session.turn.state'], { epoch: 4 }]);
    const [, through, turnId, waitpoint] = runs.suspendRun.mock.calls[0]!.arguments;
    assert.deepEqual([through, turnId, waitpoint.kind, waitpoint.run_id], [lease, 't1', 'cooperation', 'r1']);
    assert.equal(steps.recordStep.mock.callCount(), 0);
    assert.deepEqual(result.nudges, [], 'a root coordinator frees no tree slot');
  });

  it('answers null when the lease is gone at the suspension, and \'cancelled\' when a cancel came first', async () => {
    const lost = waits([member({ activeTurnId: 'mt2', activeStatus: 'in_progress' })]);
    lost.runs.suspendRun.mock.mockImplementation(async () => false);
    assert.equal(await lost.sut.awaitMembers(held, lease, [wait]), null);
    assert.equal(lost.runs.usageOf.mock.callCount(), 0);
    const cancelled = waits([member()]);
    cancelled.turns.cancellationPending.mock.mockImplementation(async () => true);
    assert.equal(await cancelled.sut.awaitMembers(held, lease, [wait]), 'cancelled');
  });

  it('a delivery wakes the waiting coordinator once its wait resolves: the members\' results its step, a new run nudged for takeover', async () => {
    const { sut, tree, turns, steps } = waits([member()]);
    const waitpoint = aCallsWaitpoint('cooperation', [wait]);
    turns.activeTurn.mock.mockImplementation(async () => aTurn({ waitpoint }));
    tree.takeSignals.mock.mockImplementation(async () => []);
    turns.resumeTurn.mock.mockImplementation(async (_m, turn, nextRunId) => ({ turn: { ...turn, waitpoint: null }, run: aRun({ id: nextRunId }) }));
    const delivered = await sut.deliver('s1');
    const [, through, step] = steps.recordStep.mock.calls[0]!.arguments;
    assert.deepEqual([through, step.kind, step.ref, step.output.kind], [null, 'waitpoint', 'wp1', 'cooperation']);
    const runId = turns.resumeTurn.mock.calls[0]!.arguments[2];
    assert.deepEqual(delivered?.nudges, [{ kind: 'takeover', runId }]);
  });

  it('delivers nothing when no signal waits and no wait resolves; a root session\'s ended turn leaves no signal at all', async () => {
    const { sut, tree, turns } = waits([]);
    turns.activeTurn.mock.mockImplementation(async () => null);
    tree.takeSignals.mock.mockImplementation(async () => []);
    assert.equal(await sut.deliver('s1'), null);
    assert.deepEqual(await sut.memberTurnEnded({} as never, aSession(), aTurn({ status: 'completed' })), []);
    assert.equal(tree.signalTurnEnded.mock.callCount(), 0);
  });

  it('a member\'s ended turn signals its parent and frees its tree\'s slot', async () => {
    const { sut, tree } = waits([]);
    tree.signalTurnEnded.mock.mockImplementation(async () => 'p1');
    const nudges = await sut.memberTurnEnded({} as never, aSession({ id: 'm1', depth: 1, rootSessionId: 'p1' }), aTurn({ status: 'failed' }));
    assert.deepEqual(tree.signalTurnEnded.mock.calls[0]!.arguments.slice(1), ['m1', 't1', 'failed']);
    assert.deepEqual(nudges, [{ kind: 'cooperation', parentSessionId: 'p1' }, { kind: 'tree', rootSessionId: 'p1' }]);
  });
});
