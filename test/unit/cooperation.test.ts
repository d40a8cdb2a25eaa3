import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentDefinition } from '#libs/agents';
import { DomainError } from '#libs/errors';
import { admitted, type CommittedStep, cooperationRules, gatePromoteInput, gateTreeContinue, type MemberState, resolveMode, type ToolCallSpec, type TurnEntity } from '#libs/engine';
import { planNextStep, type ToolPolicy } from '#libs/runtime';

// Cooperation trees' pure rules (README "Cooperation: subagents and trees"): no database.
const POLICY: ToolPolicy = {
  executorOf: (name) => ({ create_subagent: 'coordinator', message_subagent: 'coordinator', wait_subagents: 'cooperation', ask_user: 'user', add: 'server' }) [name] as never ?? null,
  needsApproval: () => false,
  idempotent: () => true,
  checkArguments: (call) => ({ ok: true, value: JSON.parse(call.arguments) as Record<string, unknown> }),
};
const call = (call_id: string, name: string, args = '{}'): ToolCallSpec => ({ call_id, name, arguments: args });
const model = (calls: ToolCallSpec[]): CommittedStep => ({ runId: 'r1', kind: 'model_call', status: 'completed', ref: null, output: { text: '', tool_calls: calls } });
const result = (id: string): CommittedStep => ({ runId: 'r1', kind: 'tool_call', status: 'completed', ref: id, output: { success: true, output: 'x' } });
const member = (over: Partial<MemberState>): MemberState => ({
  id: 'm1',
  name: 'a',
  agentId: 'coordinator',
  depth: 1,
  parentSessionId: 'p',
  pendingInputCount: 0,
  queuePaused: false,
  activeTurnId: null,
  activeStatus: null,
  waitpointKind: null,
  lastTurnId: 't1',
  lastStatus: 'completed',
  errorCode: null,
  answer: 'Echo: a',
  ...over,
});

describe('cooperation: the planner', () => {
  it('runs a coordination call as one step (counted like a new tool call), and waits for members last', () => {
    const create = call('c1', 'create_subagent', '{"task":"x"}');
    assert.deepEqual(planNextStep([model([create])], POLICY), { action: 'coordinate', call: create, args: { task: 'x' } });
    const wait = call('c2', 'wait_subagents');
    assert.deepEqual(planNextStep([model([wait, call('c3', 'ask_user', '{}')])], POLICY), { action: 'wait', kind: 'question', calls: [call('c3', 'ask_user', '{}')] });
    assert.deepEqual(planNextStep([model([create, wait]), result('c1')], POLICY), { action: 'wait', kind: 'cooperation', calls: [wait] });
    const budget = { maxModelCalls: 5, maxToolCalls: 1, modelCalls: 1, toolCalls: 1 };
    assert.equal(planNextStep([model([create])], POLICY, budget).action, 'fail');
  });

  it('records each wait call\'s output from the resolved cooperation waitpoint', () => {
    const wait = call('c2', 'wait_subagents');
    const resolved: CommittedStep = { runId: 'r1', kind: 'waitpoint', status: 'completed', ref: 'w1', output: { kind: 'cooperation', response: { type: 'cooperation', results: { c2: { success: true, output: 'done' } } } } };
    assert.deepEqual(planNextStep([model([wait]), resolved], POLICY), { action: 'record', call: wait, outcome: { success: true, output: 'done' }, started: false });
  });
});

describe('cooperation: rules', () => {
  it('derives a member\'s id from its spawning call, the same every time', () => {
    assert.equal(cooperationRules.memberSessionId('t1', 'c1'), cooperationRules.memberSessionId('t1', 'c1'));
    assert.notEqual(cooperationRules.memberSessionId('t1', 'c1'), cooperationRules.memberSessionId('t1', 'c2'));
    assert.match(cooperationRules.memberSessionId('t1', 'c1'), /^[0-9a-f]{8}-[0-9a-f]{4}-5/);
  });

  it('gives members their agent\'s tools without function tools (web search and MCP kept), and the root\'s policy', () => {
    const policy = { enabled: true, max_concurrent_subagents: 2, max_depth: 1 };
    const mcp = { type: 'mcp' as const, server_label: 'm', server_url: 'https://mcp.example/' };
    const snapshot = cooperationRules.memberSnapshot(
      {
        version: 1,
        limits: { max_model_calls: 1, max_tool_calls: 1, turn_timeout_s: 1 },
        tools: [{ type: 'function', name: 'f' }, { type: 'builtin', name: 'calculator' }, { type: 'builtin', name: 'web_search' }, mcp],
      },
      policy,
    );
    assert.deepEqual(snapshot.tools, [{ type: 'builtin', name: 'calculator' }, { type: 'builtin', name: 'web_search' }, mcp]);
    assert.equal(snapshot.multi_agent, policy);
    assert.equal(cooperationRules.maySpawn(policy, 0), true);
    assert.equal(cooperationRules.maySpawn(policy, 1), false);
    assert.equal(cooperationRules.maySpawn(undefined, 0), false);
  });

  it('resolves a wait for all only when every member settled, for any when one did; a paused queue counts as settled', () => {
    const done = member({ id: 'm1', name: 'a' });
    const running = member({ id: 'm2', name: 'b', activeTurnId: 't2', activeStatus: 'in_progress' });
    const paused = member({ id: 'm3', name: 'c', pendingInputCount: 1, queuePaused: true, lastStatus: 'cancelled', answer: null });
    assert.equal(cooperationRules.resolveWaits([{ call_id: 'w', arguments: '{}' }], [done, running]), null);
    const any = cooperationRules.resolveWaits([{ call_id: 'w', arguments: '{"mode":"any"}' }], [done, running]);
    assert.deepEqual(JSON.parse(any!.w!.output).subagents.map((m: any) => [m.name, m.status, m.answer]), [
      ['a', 'completed', 'Echo: a'],
      ['b', 'running', null],
    ]);
    const byName = cooperationRules.resolveWaits([{ call_id: 'w', arguments: '{"subagent_ids":["a","c"]}' }], [done, running, paused]);
    assert.equal(byName!.w!.success, true);
    assert.equal(cooperationRules.resolveWaits([{ call_id: 'w', arguments: '{"subagent_ids":["zz"]}' }], [done])!.w!.success, false);
    assert.equal(cooperationRules.resolveWaits([{ call_id: 'w', arguments: '{}' }], [])!.w!.success, false);
  });

  it('admits a member while fewer than the cap hold a slot and none queued before it', () => {
    assert.equal(admitted({ cap: 2, running: 1, queuedBefore: 0 }), true);
    assert.equal(admitted({ cap: 2, running: 1, queuedBefore: 1 }), false);
    assert.equal(admitted({ cap: 2, running: 2, queuedBefore: 0 }), false);
    assert.equal(admitted({ cap: null, running: 9, queuedBefore: 9 }), true);
  });

  it('during a cooperation wait: a message without mode is a follow-up; steer and promote are refused', () => {
    const waiting = { status: 'in_progress', cancellationPending: false, waitpoint: { id: 'w', kind: 'cooperation', run_id: 'r', created_at: 0 } } as unknown as TurnEntity;
    assert.equal(resolveMode(waiting, undefined, false), 'follow_up');
    assert.throws(() => resolveMode(waiting, 'steer', false), (error: unknown) => error instanceof DomainError && error.code === 'state_conflict');
    assert.throws(() => gatePromoteInput(null, 'i1', waiting), (error: unknown) => error instanceof DomainError && error.code === 'state_conflict');
  });

  it('validates multi_agent field by field', () => {
    const ok = parseAgentDefinition({ name: 'x', multi_agent: { enabled: true } });
    assert.deepEqual(ok.definition?.multi_agent, { enabled: true, max_concurrent_subagents: 6, max_depth: 1 });
    const bad = parseAgentDefinition({ name: 'x', multi_agent: { enabled: 'yes', max_concurrent_subagents: 21, max_depth: 0, agents: [], extra: 1 } });
    assert.deepEqual(bad.errors.map((e) => e.field).sort(), ['multi_agent.agents', 'multi_agent.enabled', 'multi_agent.extra', 'multi_agent.max_concurrent_subagents', 'multi_agent.max_depth']);
  });

  it('continues a tree only once it is stopped and none of its turns is still active', () => {
    const conflict = (details?: object) => (error: unknown) => error instanceof DomainError && error.code === 'state_conflict' && (details === undefined || JSON.stringify(error.details) === JSON.stringify(details));
    assert.throws(() => gateTreeContinue(null, []), conflict());
    assert.throws(() => gateTreeContinue(new Date(), ['t1', 't2']), conflict({ active_turns: ['t1', 't2'] }));
    assert.doesNotThrow(() => gateTreeContinue(new Date(), []));
  });
});

describe('cooperation: a tree’s growth is bounded', () => {
  const caps = { maxMembers: 6, maxCreatesPerTurn: 5 };
  it('allows a create while the turn and the tree have room', () => {
    assert.equal(cooperationRules.createCapRefusal({ members: 5, byTurn: 4 }, caps), null);
    assert.equal(cooperationRules.createCapRefusal({ members: 0, byTurn: 0 }, caps), null);
  });
  it('refuses past the creates of one turn, then past the members of the tree, saying which', () => {
    assert.match(cooperationRules.createCapRefusal({ members: 5, byTurn: 5 }, caps)!, /this turn already created 5 subagents.*\(5\)/);
    assert.match(cooperationRules.createCapRefusal({ members: 6, byTurn: 1 }, caps)!, /tree already has 6 subagents.*\(6\)/);
  });
  it('0 is no cap', () => {
    assert.equal(cooperationRules.createCapRefusal({ members: 1000, byTurn: 1000 }, { maxMembers: 0, maxCreatesPerTurn: 0 }), null);
  });
});
