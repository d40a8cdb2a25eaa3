import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { defineMachine, type Edge, type Machine } from '#libs/database';
import { FILE_MACHINE } from '#libs/files';
import { ATTACHMENT_MACHINE, ATTACHMENT_STATUSES, COOPERATION_SIGNAL_MACHINE, INPUT_MACHINE, INPUT_MODE_MACHINE, INPUT_MODES, INPUT_STATUSES, ITEM_MACHINE, ITEM_STATUSES, leaseStateOf, leaseStateSql, parseWaitpoint, RUN_LEASE_MACHINE, RUN_MACHINE, RUN_STATUSES, SESSION_STATUS_MACHINE, SESSION_STATUSES, type SessionEntity, sessionStatus, sessionStatusOf, sessionStatusSql, STEP_MACHINE, STEP_STATUSES, TERMINAL_TURN_STATUSES, TURN_MACHINE, TURN_STATUSES, WAITPOINT_KINDS, waitpointProblem } from '#libs/engine';
import { WEBHOOK_DELIVERY_MACHINE, WEBHOOK_DISABLED_REASON_MACHINE, WEBHOOK_ENDPOINT_MACHINE, webhookEndpointState } from '#libs/webhooks';

// Each declared state machine (defineMachine) against its own rules and against what derives from
// it: the CHECK text, the enum the DTOs show, the guards of its edges, and the migration that adds
// the CHECKs that were missing. The database's constraints are held to the machines by
// test/e2e/schema-states.test.ts; the SQL's literals by test/unit/status-literals.test.ts.

type AnyMachine = Machine<string, Record<string, Edge<string>>>;

const STORED: Record<string, AnyMachine> = {
  TURN_MACHINE,
  RUN_MACHINE,
  STEP_MACHINE,
  ITEM_MACHINE,
  INPUT_MACHINE,
  INPUT_MODE_MACHINE,
  ATTACHMENT_MACHINE,
  FILE_MACHINE,
  WEBHOOK_DELIVERY_MACHINE,
  WEBHOOK_DISABLED_REASON_MACHINE,
  COOPERATION_SIGNAL_MACHINE,
};
const DERIVED: Record<string, AnyMachine> = { SESSION_STATUS_MACHINE, RUN_LEASE_MACHINE, WEBHOOK_ENDPOINT_MACHINE };

const MIGRATION = fileURLToPath(new URL('../../../libs/database/src/migrations/1766801700000-status-checks.ts', import.meta.url));
const BUDGETS_MIGRATION = fileURLToPath(new URL('../../../libs/database/src/migrations/1767000000000-usage-and-budgets.ts', import.meta.url));

describe('defineMachine', () => {
  it('refuses a declaration that breaks its rules', () => {
    const base = { table: 't', column: 'status', states: ['a', 'b', 'c'], initial: ['a'], terminal: ['c'] } as const;
    assert.throws(() => defineMachine({ ...base, edges: { go: { from: [null], to: ['a'] }, end: { from: ['a'], to: ['c'] } } }), /no edge reaches 'b'/);
    assert.throws(() => defineMachine({ ...base, edges: { go: { from: [null], to: ['b'] }, end: { from: ['b'], to: ['a', 'c'] } } }), /creates a row in 'b'/);
    assert.throws(() => defineMachine({ ...base, edges: { go: { from: [null], to: ['a'] }, on: { from: ['a'], to: ['b', 'c'] }, back: { from: ['c'], to: ['a'] } } }), /leaves 'c', a terminal state/);
    assert.throws(() => defineMachine({ ...base, unwritten: ['b'], edges: { go: { from: [null], to: ['a'] }, on: { from: ['a'], to: ['b', 'c'] } } }), /writes 'b', declared unwritten/);
    assert.throws(() => defineMachine({ ...base, states: ['a', 'b', 'C'], edges: {} } as never), /not a plain lowercase word/);
  });

  it('builds its CHECK, list, guards and validator from the states alone', () => {
    const machine = defineMachine({
      table: 't',
      column: 'status',
      states: ['a', 'b', 'c'],
      initial: ['a'],
      terminal: ['c'],
      unwritten: ['b'],
      edges: { go: { from: [null], to: ['a'] }, end: { from: ['a'], to: ['c'] } },
    });
    assert.equal(machine.check, "CHECK (status IN ('a', 'b', 'c'))");
    assert.equal(machine.constraint, 't_status_check');
    assert.equal(machine.guard('x.status', 'a', 'c'), "x.status IN ('a', 'c')");
    assert.equal(machine.from('end'), "status = 'a'");
    assert.throws(() => machine.list('z' as 'a'), /'z' is not a declared state/);
    assert.ok(machine.is('b') && !machine.is('z') && !machine.is(1));
    assert.ok(machine.allows(null, 'a') && machine.allows('a', 'c') && !machine.allows('c', 'a'));
  });
});

describe('every declared machine', () => {
  for (const [name, machine] of Object.entries({ ...STORED, ...DERIVED })) {
    it(`${name}: its CHECK, guards and validator agree with its states`, () => {
      assert.equal(machine.check, `CHECK (${machine.column} IN (${machine.states.map((s) => `'${s}'`).join(', ')}))`);
      for (const state of machine.states) assert.ok(machine.is(state));
      for (const [edgeName, edge] of Object.entries(machine.edges)) {
        const from = edge.from.filter((s) => s !== null);
        if (from.length === 0) continue;
        const guard = machine.from(edgeName, 'c');
        assert.deepEqual([...guard.matchAll(/'([^']+)'/g)].map((m) => m[1]), from, `${name}.${edgeName}`);
      }
      assert.equal(machine.table === null, name in DERIVED);
    });
  }

  it('the enums the DTOs and repositories use are the machines\' states', () => {
    assert.deepEqual(TURN_MACHINE.states, TURN_STATUSES);
    assert.deepEqual(RUN_MACHINE.states, RUN_STATUSES);
    assert.deepEqual(STEP_MACHINE.states, STEP_STATUSES);
    assert.deepEqual(ITEM_MACHINE.states, ITEM_STATUSES);
    assert.deepEqual(INPUT_MACHINE.states, INPUT_STATUSES);
    assert.deepEqual(INPUT_MODE_MACHINE.states, INPUT_MODES);
    assert.deepEqual(ATTACHMENT_MACHINE.states, ATTACHMENT_STATUSES);
    assert.deepEqual(SESSION_STATUS_MACHINE.states, SESSION_STATUSES);
  });

  it('the machines the sessions lib declares (it cannot import libs/engine) end where turns end', () => {
    for (const status of TERMINAL_TURN_STATUSES) assert.ok(SESSION_STATUS_MACHINE.is(status) && COOPERATION_SIGNAL_MACHINE.is(status), status);
    assert.deepEqual(COOPERATION_SIGNAL_MACHINE.edges.turnEnded.to, TERMINAL_TURN_STATUSES);
  });

  it('the migration adds the CHECKs that were missing, as the machines declare them', () => {
    const migration = readFileSync(MIGRATION, 'utf8');
    assert.ok(migration.includes(`ADD CONSTRAINT ${COOPERATION_SIGNAL_MACHINE.constraint} ${COOPERATION_SIGNAL_MACHINE.check} NOT VALID`));
    assert.ok(migration.includes(`VALIDATE CONSTRAINT ${COOPERATION_SIGNAL_MACHINE.constraint}`));
    // The kinds as of then; the budgets migration added `budget` (the latest CHECK holds them all).
    assert.ok(migration.includes(`waitpoint->>'kind' IN (${WAITPOINT_KINDS.filter((k) => k !== 'budget').map((k) => `'${k}'`).join(', ')})`));
    assert.ok(readFileSync(BUDGETS_MIGRATION, 'utf8').includes(`waitpoint->>'kind' IN (${WAITPOINT_KINDS.map((k) => `'${k}'`).join(', ')})`));
  });
});

describe('the derived session status: one declaration, one function', () => {
  const cases: [string | null, number, boolean, string][] = [
    [null, 0, false, 'idle'],
    [null, 2, false, 'in_progress'],
    [null, 2, true, 'idle'],
    ['queued', 0, false, 'in_progress'],
    ['in_progress', 0, false, 'in_progress'],
    ['requires_action', 3, false, 'requires_action'],
    ['completed', 0, false, 'completed'],
    ['failed', 1, true, 'failed'],
    ['failed', 1, false, 'in_progress'],
    ['cancelled', 0, false, 'cancelled'],
  ];
  for (const [turnStatus, pendingInputCount, queuePaused, expected] of cases) {
    it(`turn ${turnStatus}, ${pendingInputCount} pending${queuePaused ? ', paused' : ''}: ${expected}`, () => {
      assert.equal(sessionStatusOf({ turnStatus, pendingInputCount, queuePaused }), expected);
      const session = { currentTurn: turnStatus ? { status: turnStatus } : null, pendingInputCount, queuePaused } as unknown as SessionEntity;
      assert.equal(sessionStatus(session), expected, 'lifecycle shows the same status');
    });
  }

  it('its SQL twin has one predicate per declared status', () => {
    assert.deepEqual(Object.keys(sessionStatusSql('x')).sort(), [...SESSION_STATUS_MACHINE.states].sort());
  });
});

describe('the run lease', () => {
  const now = new Date(10_000);
  it('takeover and seizure are edges of the lease, not of the run status', () => {
    assert.ok(RUN_LEASE_MACHINE.allows('unleased', 'held'), 'takeOver');
    assert.ok(RUN_LEASE_MACHINE.allows('expired', 'held') && RUN_LEASE_MACHINE.allows('held', 'held'), 'seize');
    assert.ok(!RUN_LEASE_MACHINE.allows('released', 'held'));
    assert.deepEqual(RUN_MACHINE.unwritten, ['queued']);
  });

  it('a run read at a time is in one lease state', () => {
    const run = (status: string, leaseOwner: string | null, expiresMs: number | null) => ({ status, leaseOwner, leaseExpiresAt: expiresMs === null ? null : new Date(expiresMs) });
    assert.equal(leaseStateOf(run('in_progress', null, null), now), 'unleased');
    assert.equal(leaseStateOf(run('in_progress', 'w', 20_000), now), 'held');
    assert.equal(leaseStateOf(run('in_progress', 'w', 5_000), now), 'expired');
    assert.equal(leaseStateOf(run('yielded', null, null), now), 'released');
    assert.deepEqual(Object.keys(leaseStateSql()).sort(), [...RUN_LEASE_MACHINE.states].sort());
  });
});

describe('webhook endpoints and waitpoints', () => {
  it('an endpoint\'s state derives from its columns', () => {
    assert.equal(webhookEndpointState({ enabled: true, failingSince: null }), 'enabled');
    assert.equal(webhookEndpointState({ enabled: true, failingSince: new Date() }), 'failing');
    assert.equal(webhookEndpointState({ enabled: false, failingSince: new Date() }), 'disabled');
  });

  it('a stored waitpoint is read as the union by kind, or refused', () => {
    const base = { id: 'w', run_id: 'r', created_at: 1 };
    assert.equal(parseWaitpoint({ ...base, kind: 'question', questions: [] }).kind, 'question');
    for (const kind of ['approval', 'client_tool', 'cooperation']) assert.equal(waitpointProblem({ ...base, kind, tool_calls: [] }), null, kind);
    assert.match(waitpointProblem({ ...base, kind: 'approval' }) ?? '', /without tool_calls/);
    assert.equal(parseWaitpoint({ ...base, kind: 'budget', budget_id: 'b', limit: 'model_calls', spent: 1 }).kind, 'budget');
    assert.match(waitpointProblem({ ...base, kind: 'budget', tool_calls: [] }) ?? '', /without budget_id/);
    assert.match(waitpointProblem({ ...base, kind: 'question', tool_calls: [] }) ?? '', /without questions/);
    assert.match(waitpointProblem({ ...base, kind: 'survey', questions: [] }) ?? '', /unknown kind/);
    assert.throws(() => parseWaitpoint(null), /malformed/);
    assert.deepEqual([...WAITPOINT_KINDS].sort(), ['approval', 'budget', 'client_tool', 'cooperation', 'question']);
  });
});
