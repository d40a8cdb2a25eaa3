import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityManager } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { ATTACHMENT_TRANSITIONS, gateCancelInput, gatePromoteInput, INPUT_TRANSITIONS, type InputEntity, InputsRepository, ItemsRepository, MODE_TRANSITIONS, RUN_TRANSITIONS, RunsRepository, SETTLED_RUN_STATUSES, settledStatus, settledStatusSql, statusGuard, STEP_TRANSITIONS, StepsRepository, TURN_TRANSITIONS, type TurnEntity, TurnsRepository } from '#libs/engine';

// The state machines' transition tables against the repositories that perform them: each named
// method is run on a connection that records its statements (no database), and its statement must
// carry the guard of its edge and write its target status. A new transition without a call here
// fails the first test.

const UUID = '0197a8a0-0000-7000-8000-000000000001';
const LEASE = { runId: UUID, owner: 'worker-1', epoch: 3 };
const AT = new Date(0);
const TURN = { id: UUID, sessionId: UUID, currentRunId: UUID, waitpoint: { run_id: UUID } } as unknown as TurnEntity;

/** A connection that records every statement and answers with no rows (what a lost guard returns). */
function recorder(): { manager: EntityManager; statements: string[] } {
  const statements: string[] = [];
  const query = async (sql: string | { text: string }): Promise<unknown> => {
    const text = typeof sql === 'string' ? sql : sql.text;
    statements.push(text);
    return /^\s*(WITH[\s\S]*\)\s*)?(UPDATE|DELETE)\b/.test(text) ? [[], 0] : [];
  };
  const manager = {
    query,
    create: (_entity: unknown, row: object) => ({ ...row }),
    transaction: async (work: (m: unknown) => Promise<unknown>) => work(manager),
    getRepository: () => ({ findOneBy: async () => null, findOneByOrFail: async () => ({}) }),
  };
  return { manager: manager as unknown as EntityManager, statements };
}

const repositories = (manager: EntityManager) => {
  const table = { query: manager.query.bind(manager), manager } as never;
  return {
    TurnsRepository: new TurnsRepository(table),
    RunsRepository: new RunsRepository(table),
    StepsRepository: new StepsRepository(),
    ItemsRepository: new ItemsRepository(table),
    InputsRepository: new InputsRepository(table, { recoveryGraceMs: 1000 } as AppConfig),
  };
};
type Repos = ReturnType<typeof repositories>;

/** How to call each performer once. */
const CALLS: Record<string, (r: Repos, m: EntityManager) => Promise<unknown>> = {
  'TurnsRepository.startTurn': (r, m) =>
    r.TurnsRepository.startTurn(m, { turnId: UUID, runId: UUID, sessionId: UUID, seq: 1, agentId: 'a', model: 'm', inputIds: [UUID], config: {}, leaseOwner: 'w', leaseMs: 1000, at: AT, accountId: null }),
  'RunsRepository.suspendRun': (r, m) => r.RunsRepository.suspendRun(m, LEASE, UUID, { id: 'w1', kind: 'question', run_id: UUID, created_at: 0 }, AT),
  'TurnsRepository.resumeTurn': (r, m) => r.TurnsRepository.resumeTurn(m, TURN, UUID, AT),
  'TurnsRepository.settle': (r, m) => r.TurnsRepository.settle(m, { lease: LEASE, runId: UUID, runStatus: 'completed', turn: TURN, error: null, at: AT }),
  'TurnsRepository.cancelWaitingTurn': (r, m) => r.TurnsRepository.cancelWaitingTurn(m, TURN, AT),
  'TurnsRepository.requestCancel': (r, m) => r.TurnsRepository.requestCancel(m, UUID, UUID),
  'RunsRepository.yieldRun': (r, m) => r.RunsRepository.yieldRun(m, LEASE, { nextRunId: UUID, epoch: 4, inputIds: [], at: AT }, 1000),
  'RunsRepository.interruptRun': (r, m) => r.RunsRepository.interruptRun(m, UUID, LEASE, { nextRunId: UUID, epoch: 4, inputIds: [], at: AT }),
  'StepsRepository.recordStep': (r, m) =>
    r.StepsRepository.recordStep(m, LEASE, { runId: UUID, turnId: UUID, sessionId: UUID, kind: 'tool_call', status: 'completed', ref: 'c1', input: {}, output: {}, at: AT }),
  'InputsRepository.insert': (r, m) =>
    r.InputsRepository.insert(m, { sessionId: UUID, receivedSeq: 1, mode: 'follow_up', messages: [], attachmentFileIds: [], config: {} as never, receivedAt: AT }),
  'InputsRepository.markConsumed': (r, m) => r.InputsRepository.markConsumed(m, [UUID], UUID, UUID, AT),
  'InputsRepository.markCancelled': (r, m) => r.InputsRepository.markCancelled(m, UUID, AT),
  'InputsRepository.markSteer': (r, m) => r.InputsRepository.markSteer(m, UUID),
  'InputsRepository.markAttachmentsReady': (r, m) => r.InputsRepository.markAttachmentsReady(m, UUID),
};

const MACHINES = { TURN_TRANSITIONS, RUN_TRANSITIONS, STEP_TRANSITIONS, INPUT_TRANSITIONS, MODE_TRANSITIONS, ATTACHMENT_TRANSITIONS };

describe('state machines', () => {
  for (const [machine, transitions] of Object.entries(MACHINES)) {
    for (const [name, edge] of Object.entries(transitions) as [string, { from: readonly (string | null)[]; to: readonly string[]; by: string; column: string }][]) {
      it(`${machine}.${name}: ${edge.by} performs ${edge.from.join('|')} → ${edge.to.join('|')} with its guard`, async () => {
        const call = CALLS[edge.by];
        assert.ok(call, `no call for ${edge.by} in this test`);
        const { manager, statements } = recorder();
        await call(repositories(manager), manager).catch(() => undefined);
        const sql = statements.join('\n');
        assert.ok(statements.length > 0, `${edge.by} issued no statement`);
        if (edge.from.some((status) => status !== null)) {
          assert.ok(sql.includes(statusGuard(edge.column, edge.from)), `${edge.by} lacks the guard ${statusGuard(edge.column, edge.from)}:\n${sql}`);
        }
        const changes = edge.to.filter((status) => !edge.from.includes(status));
        if (edge.to.length === 1 && changes.length === 1) assert.match(sql, new RegExp(`'${changes[0]}'`), `${edge.by} does not write ${changes[0]}`);
      });
    }
  }

  it('every status a transition names is a declared status of its machine', async () => {
    const { TURN_STATUSES, RUN_STATUSES, STEP_STATUSES } = await import('#libs/engine');
    const { INPUT_STATUSES, INPUT_MODES, ATTACHMENT_STATUSES } = await import('#libs/engine');
    const declared: Record<string, readonly string[]> = {
      TURN_TRANSITIONS: TURN_STATUSES,
      RUN_TRANSITIONS: RUN_STATUSES,
      STEP_TRANSITIONS: STEP_STATUSES,
      INPUT_TRANSITIONS: INPUT_STATUSES,
      MODE_TRANSITIONS: INPUT_MODES,
      ATTACHMENT_TRANSITIONS: ATTACHMENT_STATUSES,
    };
    for (const [machine, transitions] of Object.entries(MACHINES)) {
      for (const edge of Object.values(transitions) as { from: readonly (string | null)[]; to: readonly string[] }[]) {
        for (const status of [...edge.from, ...edge.to]) if (status !== null) assert.ok(declared[machine]!.includes(status), `${machine}: ${status}`);
      }
    }
  });
});

describe('cancel wins over completion', () => {
  it('a completion settled after an accepted cancel ends the turn cancelled; failures and cancellations stay as they are', () => {
    assert.equal(settledStatus('completed', true), 'cancelled');
    assert.equal(settledStatus('completed', false), 'completed');
    assert.equal(settledStatus('failed', true), 'failed');
    assert.equal(settledStatus('failed', false), 'failed');
    assert.equal(settledStatus('cancelled', false), 'cancelled');
    assert.equal(settledStatus('cancelled', true), 'cancelled');
  });

  it('the settle statement evaluates the same rule', async () => {
    assert.equal(settledStatusSql('p', '$4'), `CASE WHEN p AND $4 IN ('completed') THEN 'cancelled' ELSE $4 END`);
    const { manager, statements } = recorder();
    await repositories(manager).TurnsRepository.settle(manager, { lease: LEASE, runId: UUID, runStatus: 'completed', turn: TURN, error: null, at: AT });
    assert.ok(statements[0]!.includes(settledStatusSql('cancellation_pending', '$4::text')));
    assert.deepEqual([...SETTLED_RUN_STATUSES].sort(), ['cancelled', 'completed', 'failed']);
  });
});

describe('input gates', () => {
  const input = (fields: Partial<InputEntity>): InputEntity => ({ id: UUID, status: 'pending', mode: 'follow_up', attachmentStatus: 'ready', config: {}, ...fields }) as InputEntity;
  const conflict = (fn: () => unknown, code: string): void => assert.throws(fn, (error: unknown) => error instanceof DomainError && error.code === code);

  it('cancels only a pending input of the session', () => {
    assert.equal(gateCancelInput(input({}), UUID).id, UUID);
    conflict(() => gateCancelInput(input({ status: 'consumed' }), UUID), 'state_conflict');
    conflict(() => gateCancelInput(input({ status: 'cancelled' }), UUID), 'state_conflict');
    conflict(() => gateCancelInput(null, UUID), 'not_found');
  });

  it('promotes a ready pending follow-up; a steer is already satisfied; never while the turn waits or is being cancelled, never a compaction request', () => {
    assert.equal(gatePromoteInput(input({}), UUID, null)?.id, UUID);
    assert.equal(gatePromoteInput(input({ mode: 'steer' }), UUID, null), null);
    conflict(() => gatePromoteInput(input({ attachmentStatus: 'preparing' }), UUID, null), 'state_conflict');
    conflict(() => gatePromoteInput(input({ status: 'consumed' }), UUID, null), 'state_conflict');
    conflict(() => gatePromoteInput(input({}), UUID, { status: 'requires_action', cancellationPending: false } as TurnEntity), 'turn_requires_action');
    conflict(() => gatePromoteInput(input({}), UUID, { status: 'in_progress', cancellationPending: true } as TurnEntity), 'turn_cancelling');
    conflict(() => gatePromoteInput(null, UUID, null), 'not_found');
    conflict(() => gatePromoteInput(input({ config: { compact: {} } as InputEntity['config'] }), UUID, null), 'state_conflict');
  });
});
