import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import type { EnvironmentConfig } from '#libs/environments';
import { CooperationWaits, type HeldTurn, type ItemEntity, ItemsRepository, ModelRequestsRepository, type Outcome, type RunOutput, SessionsRepository, SessionTransactions, type TurnEntity, TurnSettlement, TurnsRepository } from '#libs/engine';
import { RunOutputWriter } from '../../libs/engine/src/endings/run-output.js';
import { aLease, aRun, aSession, aTurn, typesOf } from './support/aggregate-fixtures.js';
import { FakeSessionTransactions, rowOf } from './support/fake-session-transactions.js';
import { newTestService } from './support/new-test-service.js';

// How the worker holding a run settles its turn (TurnSettlement.settle): one session transaction,
// fenced by the run's lease; what each outcome writes, announces and nudges after commit.
const lease = aLease({ epoch: 3 });
const held = { turn: aTurn(), run: aRun(), lease, config: { agent_id: 'agent', model: 'scripted:echo', tool_approval_mode: 'default', instructions: '' } } as HeldTurn;
const output = (over: Partial<RunOutput> = {}): RunOutput => ({ item: null, outputIndex: 1, text: 'Hello', reasoning: '', lostDeltas: false, ...over });
const runningCommand = {
  id: 'cmd-1',
  sessionId: 's1',
  turnId: 't1',
  runId: 'r1',
  inputId: null,
  seq: '5',
  type: 'command_execution',
  role: null,
  status: 'incomplete',
  content: [{ type: 'function_call', call_id: 'c1', command_execution: { command: 'sleep 9', cwd: '/workspace', exit_code: null, output: 'x', duration_ms: null, output_index: 2 } }],
  phase: null,
  tokens: null,
  createdAt: new Date(0),
} as ItemEntity;
const environment: EnvironmentConfig = { type: 'openai_hosted', network: { access: 'disabled' }, env: {}, files: [], setup_commands: [], limits: {} };
const completed: Outcome = { status: 'completed', modelCall: { model: 'gpt-test', usage: null, requestJson: '{"model":"gpt-test"}' } };

/** The settle's fenced statement answers `turn` as settled (null: the lease was gone), with the locked session row. */
function settlement(turn: TurnEntity | null, session = aSession()) {
  const transactions = new FakeSessionTransactions();
  const service = newTestService(TurnSettlement, [[SessionTransactions, transactions]]);
  const { mocks } = service;
  Object.assign(mocks.get(AppConfig), { maxActiveTurnsPerOwner: 0 });
  const turns = mocks.get(TurnsRepository);
  turns.settle.mock.mockImplementation(async () => (turn ? { turn, runUsage: null, spent: [], session: rowOf(session) } : null));
  mocks.get(RunOutputWriter).finalOutputWrite.mock.mockImplementation(() => ({ events: [{ type: 'agent.session.turn.item.done' } as never], write: { sql: 'INSERT', params: [], name: 'item' } }));
  mocks.get(CooperationWaits).memberTurnEnded.mock.mockImplementation(async () => []);
  return { ...service, transactions, turns, sessions: mocks.get(SessionsRepository), writer: mocks.get(RunOutputWriter), requests: mocks.get(ModelRequestsRepository) };
}

describe('settling a turn (TurnSettlement.settle)', () => {
  it('a lease gone (the fenced settle matched nothing) writes, announces and nudges nothing', async () => {
    const { sut, turns, transactions } = settlement(null);
    assert.equal(await sut.settle(held, lease, output(), completed), null);
    assert.deepEqual(turns.settle.mock.calls[0]!.arguments[1].lease, lease);
    const { writes, events, nudges } = transactions.only;
    assert.deepEqual([writes, events, nudges], [[], [], []]);
  });

  it('completes: the final answer written with the overview, run and turn completed under the lease\'s epoch, its request recorded', async () => {
    const { sut, transactions, writer, requests } = settlement(aTurn({ status: 'completed', completedAt: new Date() }), aSession({ itemSeq: '9', pendingInputCount: 2 }));
    const settled = await sut.settle(held, lease, output(), completed);
    assert.deepEqual(writer.finalOutputWrite.mock.calls[0]!.arguments.slice(3, 5), ['completed', 10], 'numbered from the locked session\'s item counter');
    const { events, emitOptions, writes } = transactions.only;
    assert.deepEqual(typesOf(events), ['agent.session.turn.item.done', 'yuxi.session.run.completed', 'agent.session.turn.completed']);
    assert.deepEqual(emitOptions, { epoch: 3 });
    assert.equal(writes.length, 2, 'the overview and the output item, composed into one write');
    assert.equal(requests.record.mock.calls[0]!.arguments[2], '{"model":"gpt-test"}');
    assert.deepEqual([settled?.status, settled?.pendingInputs], ['completed', 2]);
    assert.equal(transactions.sent.length, 1, 'published and nudged after commit by the transaction helper');
  });

  it('writes the answer\'s model call to the usage ledger in the settle statement, keyed by the answer\'s step; a call a cancel stopped too; none without a call', async () => {
    const answered = settlement(aTurn({ status: 'completed', completedAt: new Date() }));
    await answered.sut.settle(held, lease, output(), { status: 'completed', modelCall: { model: 'openai:m', usage: { input_tokens: 5, output_tokens: 2, cached_tokens: 1, reasoning_tokens: 1, total_tokens: 7 }, wallMs: 40 } });
    const spec = answered.turns.settle.mock.calls[0]!.arguments[1];
    assert.deepEqual(spec.usage, { kind: 'model_call', model: 'openai:m', step_id: spec.answer!.id, input_tokens: 5, output_tokens: 2, cached_tokens: 1, reasoning_tokens: 1, wall_ms: 40 });
    const stopped = settlement(aTurn({ status: 'cancelled', completedAt: new Date() }));
    await stopped.sut.settle(held, lease, output({ cutCall: { model: 'openai:m', usage: null, wallMs: 12 } }), { status: 'cancelled' });
    assert.deepEqual(stopped.turns.settle.mock.calls[0]!.arguments[1].usage, { kind: 'model_call', model: 'openai:m', step_id: null, input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, wall_ms: 12 });
    const none = settlement(aTurn({ status: 'cancelled', completedAt: new Date() }));
    await none.sut.settle(held, lease, output(), { status: 'cancelled' });
    assert.equal(none.turns.settle.mock.calls[0]!.arguments[1].usage, null);
  });

  it('a cancel accepted before the settle wins over completion: the turn ends cancelled, its answer is no step', async () => {
    const { sut, transactions, writer, requests } = settlement(aTurn({ status: 'cancelled', completedAt: new Date() }));
    const settled = await sut.settle(held, lease, output({ item: null }), completed);
    assert.equal(settled?.status, 'cancelled');
    assert.equal(requests.record.mock.callCount(), 0);
    assert.equal(writer.finalOutputWrite.mock.callCount(), 0, 'nothing was shown: no item to keep');
    assert.deepEqual(typesOf(transactions.only.events), ['yuxi.session.run.cancelled', 'agent.session.turn.cancelled']);
  });

  it('text already shown is kept as an incomplete item when the turn fails, and a failed turn pauses what waits behind it', async () => {
    const error = { code: 'model_error', message: 'boom' };
    const { sut, writer, sessions } = settlement(aTurn({ status: 'failed', error, completedAt: new Date() }), aSession({ pendingInputCount: 1 }));
    const shown = output({ item: { id: 'item-1' } as never });
    await sut.settle(held, lease, shown, { status: 'failed', error });
    assert.equal(writer.finalOutputWrite.mock.calls[0]!.arguments[3], 'incomplete');
    assert.deepEqual(sessions.setQueuePaused.mock.calls[0]!.arguments.slice(1), ['s1', true]);
  });

  it('a turn of a session with an environment that ends mid-command ends the command\'s item (incomplete, done before the run\'s end); without one, nothing is asked', async () => {
    const error = { code: 'run_failed', message: 'The run failed unexpectedly' };
    const { sut, transactions, mocks } = settlement(aTurn({ status: 'failed', error, completedAt: new Date() }));
    const items = mocks.get(ItemsRepository);
    items.endRunningCommands.mock.mockImplementation(async () => [runningCommand]);
    await sut.settle({ ...held, config: { ...held.config, environment } }, lease, output(), { status: 'failed', error });
    assert.deepEqual(items.endRunningCommands.mock.calls[0]!.arguments.slice(1, 2), [held.turn.id]);
    assert.match(items.endRunningCommands.mock.calls[0]!.arguments[2], /failed before this command ended/);
    const { events } = transactions.only;
    assert.deepEqual(typesOf(events), ['agent.session.turn.item.done', 'yuxi.session.run.failed', 'agent.session.turn.failed']);
    assert.deepEqual([(events[0] as any).output_index, (events[0] as any).item.status], [2, 'incomplete']);

    const plain = settlement(aTurn({ status: 'failed', error, completedAt: new Date() }));
    await plain.sut.settle(held, lease, output(), { status: 'failed', error });
    assert.equal(plain.mocks.get(ItemsRepository).endRunningCommands.mock.callCount(), 0);
  });

  it('a completed turn of a session with an environment ends a command item still running too, announced before the answer; without one, nothing is asked', async () => {
    const { sut, transactions, mocks } = settlement(aTurn({ status: 'completed', completedAt: new Date() }));
    const items = mocks.get(ItemsRepository);
    items.endRunningCommands.mock.mockImplementation(async () => [runningCommand]);
    await sut.settle({ ...held, config: { ...held.config, environment } }, lease, output(), completed);
    assert.equal(items.endRunningCommands.mock.callCount(), 1);
    assert.match(items.endRunningCommands.mock.calls[0]!.arguments[2], /completed before this command ended/);
    const { events } = transactions.only;
    assert.deepEqual(typesOf(events), ['agent.session.turn.item.done', 'agent.session.turn.item.done', 'yuxi.session.run.completed', 'agent.session.turn.completed']);
    assert.equal((events[0] as any).item.id, 'cmd-1');

    const plain = settlement(aTurn({ status: 'completed', completedAt: new Date() }));
    await plain.sut.settle(held, lease, output(), completed);
    assert.equal(plain.mocks.get(ItemsRepository).endRunningCommands.mock.callCount(), 0);
  });

  it('nudges no queue (the settling worker drives the session on), but a member\'s parent, and the account\'s waiting sessions when it was at its cap', async () => {
    const { sut, transactions, mocks } = settlement(aTurn({ status: 'completed', completedAt: new Date() }), aSession({ id: 'm1', depth: 1 }));
    mocks.get(CooperationWaits).memberTurnEnded.mock.mockImplementation(async () => [{ kind: 'cooperation', parentSessionId: 'p1' }]);
    transactions.rows = (fragment) => (fragment.name === 'item' ? [] : [{ crowded_account: 'acct-1' }]);
    await sut.settle(held, lease, output(), completed);
    assert.deepEqual(transactions.sent[0]!.nudges, [
      { kind: 'cooperation', parentSessionId: 'p1' },
      { kind: 'account', accountId: 'acct-1' },
    ]);
  });

  it('a completion without an answer (a manual compaction) writes no item', async () => {
    const { sut, writer } = settlement(aTurn({ status: 'completed', completedAt: new Date() }));
    await sut.settle(held, lease, output(), { status: 'completed', withoutAnswer: true });
    assert.equal(writer.finalOutputWrite.mock.callCount(), 0);
  });
});
