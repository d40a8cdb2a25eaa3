import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityManager } from 'typeorm';
import { FilesRepository } from '#libs/files';
import { type FrozenInputConfig, type InputEntity, InputsRepository, type MessageSpec, ProjectsRepository, SessionControls, SessionsRepository, TurnsRepository } from '#libs/engine';
import { aSession, aTurn, aWaitingTurn, aWaitpoint, domainError } from './support/aggregate-fixtures.js';
import { newTestService } from './support/new-test-service.js';

// A message accepted under the session lock (SessionControls.acceptMessage, the path every message
// with files, every steer and every message to a session with a turn takes): which case reads the
// turns table, what is refused before anything is written, and what the input becomes.
const manager = {} as EntityManager;
const spec = (over: Partial<MessageSpec> = {}): MessageSpec => ({
  requestedMode: undefined,
  hasOverride: false,
  messages: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] as MessageSpec['messages'],
  attachmentFileIds: [],
  config: (session) => ({ model: session.model }) as FrozenInputConfig,
  ...over,
});
const running = { id: 't1', status: 'in_progress', current_run_id: 'r1', result_run_id: null, waitpoint: null };

function acceptance(session = aSession()) {
  const service = newTestService(SessionControls);
  const { mocks } = service;
  const sessions = mocks.get(SessionsRepository);
  const inputs = mocks.get(InputsRepository);
  sessions.acceptInput.mock.mockImplementation(async () => ({ session, receivedSeq: 7 }));
  inputs.insert.mock.mockImplementation(async (_m, input) => ({ id: 'i1', ...input }) as unknown as InputEntity);
  inputs.insertion.mock.mockImplementation((_m, input) => ({ row: { id: 'i1', ...input } as unknown as InputEntity, write: { sql: () => 'INSERT', values: [] } }));
  return { ...service, sessions, inputs, turns: mocks.get(TurnsRepository), files: mocks.get(FilesRepository), projects: mocks.get(ProjectsRepository) };
}

describe('accepting a message under the session lock (SessionControls.acceptMessage)', () => {
  it('queues a follow-up to a session whose overview shows no active turn without reading the turns table', async () => {
    const { sut, sessions, turns, inputs, files } = acceptance();
    const { input, steersRunningTurn, riding } = await sut.acceptMessage(manager, 'owner-1', 's1', spec({ requestedMode: 'follow_up' }));
    assert.deepEqual(sessions.acceptInput.mock.calls[0]!.arguments.slice(1, 3), ['s1', 'owner-1'], 'owner-scoped: another owner\'s session is not found');
    assert.equal(turns.activeTurn.mock.callCount(), 0);
    const [, stored] = inputs.insert.mock.calls[0]!.arguments;
    assert.deepEqual([stored.mode, stored.priority, stored.receivedSeq, stored.config], ['follow_up', 0, 7, { model: 'gpt-test' }]);
    assert.deepEqual(files.bindDrafts.mock.calls[0]!.arguments.slice(1), ['owner-1', [], 's1', 'i1']);
    assert.deepEqual([input.id, steersRunningTurn, riding], ['i1', false, null]);
  });

  it('an unmarked message steers into the executing turn (the caller then tells its worker); with an override it queues as a follow-up', async () => {
    const steer = acceptance(aSession({ currentTurn: running }));
    steer.turns.activeTurn.mock.mockImplementation(async () => aTurn());
    const steered = await steer.sut.acceptMessage(manager, 'owner-1', 's1', spec());
    assert.equal(steer.inputs.insert.mock.calls[0]!.arguments[1].mode, 'steer');
    assert.equal(steered.steersRunningTurn, true);
    const override = acceptance(aSession({ currentTurn: running }));
    override.turns.activeTurn.mock.mockImplementation(async () => aTurn());
    const queued = await override.sut.acceptMessage(manager, 'owner-1', 's1', spec({ hasOverride: true }));
    assert.equal(override.inputs.insert.mock.calls[0]!.arguments[1].mode, 'follow_up');
    assert.equal(queued.steersRunningTurn, false);
  });

  it('refuses, writing nothing, a message to an archived session, to a deleted project\'s session, or while the turn waits or is being cancelled', async () => {
    const cases: [ReturnType<typeof aSession>, ReturnType<typeof aTurn> | null, boolean, Parameters<typeof domainError>[0]][] = [
      [aSession({ archived: true }), null, false, 'state_conflict'],
      [aSession({ projectId: 'p1' }), null, true, 'state_conflict'],
      [aSession({ currentTurn: running }), aWaitingTurn(aWaitpoint()), false, 'turn_requires_action'],
      [aSession({ currentTurn: running }), aTurn({ cancellationPending: true }), false, 'turn_cancelling'],
    ];
    for (const [session, active, projectDeleted, code] of cases) {
      const { sut, turns, projects, inputs, sessions } = acceptance(session);
      turns.activeTurn.mock.mockImplementation(async () => active);
      projects.isDeletedProject.mock.mockImplementation(async () => projectDeleted);
      await assert.rejects(sut.acceptMessage(manager, 'owner-1', 's1', spec()), domainError(code), code);
      assert.equal(inputs.insert.mock.callCount() + inputs.insertion.mock.callCount() + sessions.setQueuePaused.mock.callCount(), 0);
    }
  });

  it('a message to a paused queue resumes it and runs first; a compaction request leaves it paused and queues behind a blocked turn', async () => {
    const resumed = acceptance(aSession({ queuePaused: true, pendingInputCount: 2 }));
    await resumed.sut.acceptMessage(manager, 'owner-1', 's1', spec({ requestedMode: 'follow_up' }));
    assert.deepEqual(resumed.sessions.setQueuePaused.mock.calls[0]!.arguments.slice(1), ['s1', false]);
    assert.equal(resumed.inputs.insert.mock.calls[0]!.arguments[1].priority, 1);
    const compaction = acceptance(aSession({ queuePaused: true, currentTurn: running }));
    await compaction.sut.acceptMessage(manager, 'owner-1', 's1', spec({ requestedMode: 'follow_up', resumesPausedQueue: false, queuesBehindBlockedTurn: true }));
    assert.equal(compaction.sessions.setQueuePaused.mock.callCount(), 0);
    assert.equal(compaction.turns.activeTurn.mock.callCount(), 0, 'it waits behind whatever the turn does');
    assert.equal(compaction.inputs.insert.mock.calls[0]!.arguments[1].priority, 0);
  });

  it('hands the input\'s insert back to ride with the receipt when asked and no file is attached; files need the row first', async () => {
    const riding = acceptance();
    const result = await riding.sut.acceptMessage(manager, 'owner-1', 's1', spec({ requestedMode: 'follow_up', insertWithReceipt: true }));
    assert.equal(riding.inputs.insert.mock.callCount(), 0);
    assert.equal(riding.files.bindDrafts.mock.callCount(), 0);
    assert.equal(result.riding, riding.inputs.insertion.mock.calls[0]!.result!.write);
    const withFiles = acceptance();
    await withFiles.sut.acceptMessage(manager, 'owner-1', 's1', spec({ requestedMode: 'follow_up', insertWithReceipt: true, attachmentFileIds: ['f1'] }));
    assert.equal(withFiles.inputs.insertion.mock.callCount(), 0);
    assert.deepEqual(withFiles.files.bindDrafts.mock.calls[0]!.arguments.slice(2), [['f1'], 's1', 'i1']);
  });
});
