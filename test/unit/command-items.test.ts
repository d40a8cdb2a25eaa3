import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { commandItemId, type ItemEntity, ItemsRepository, isCommandCall, type StoredContentPart, toItemDto, type ToolCallSpec, type CommittedStep } from '#libs/engine';
import { type HarnessCall, SessionEnvironments } from '#libs/environments';
import type { OutgoingEvent } from '#libs/events';
import { CallInFlight, commandEnding, commandNotRun, HarnessCalls, OUTCOME_UNKNOWN, planNextStep, toModelMessages, toolPolicy } from '#libs/runtime';
import { harnessTools } from '#libs/tools';
import { newTestService } from './support/new-test-service.js';

// A `shell` call in a session's workspace: its command_execution item as clients read it, what
// the model reads of it (unchanged: a tool call and its output), and what a takeover does with a
// command killed with its worker. Pure.

const ENV = { environment: { type: 'openai_hosted' as const, network: { access: 'disabled' as const }, env: {}, files: [], setup_commands: [], limits: {} } };
const shellCall: ToolCallSpec = { call_id: 'call_1', name: 'shell', arguments: '{"command":"echo hi > a.txt && ls"}' };
const record = { command: 'echo hi > a.txt && ls', cwd: '/workspace', exit_code: null, output: null, duration_ms: null, output_index: 1 };
const item = (type: string, status: ItemEntity['status'], part: StoredContentPart): ItemEntity => ({
  id: type === 'command_execution' ? commandItemId('turn_1', 'call_1') : `item_${type}`,
  sessionId: 's',
  turnId: 'turn_1',
  runId: 'run_1',
  inputId: null,
  seq: '1',
  type,
  role: null,
  status,
  content: [part],
  phase: null,
  tokens: null,
  createdAt: new Date(0),
});

describe('command_execution items', () => {
  it('are what a shell call is in a session with an environment, and only there', () => {
    assert.equal(isCommandCall(ENV, 'shell'), true);
    assert.equal(isCommandCall({}, 'shell'), false, 'a client function named shell stays a function_call');
    assert.equal(isCommandCall(ENV, 'write_file'), false);
    assert.equal(commandItemId('turn_1', 'call_1'), commandItemId('turn_1', 'call_1'), 'derived from the call: a takeover finds it without a read');
    assert.notEqual(commandItemId('turn_1', 'call_1'), commandItemId('turn_1', 'call_2'));
  });

  it('show the upstream fields: in progress with nothing known of the end, then the exit code, output and duration', () => {
    const running = toItemDto(item('command_execution', 'in_progress', { type: 'function_call', ...shellCall, command_execution: record }));
    assert.equal(running.type, 'command_execution');
    assert.equal(running.status, 'in_progress');
    assert.equal(running.turn_id, 'turn_1');
    assert.equal(running.call_id, 'call_1');
    assert.equal(running.name, 'shell');
    assert.deepEqual([running.command, running.cwd, running.exit_code, running.output, running.duration_ms], ['echo hi > a.txt && ls', '/workspace', null, null, null]);
    const ended = { ...record, ...commandEnding({ command: record.command, cwd: '/workspace', exitCode: 0, output: 'a.txt\n', durationMs: 12 }) };
    const done = toItemDto(item('command_execution', 'completed', { type: 'function_call', ...shellCall, command_execution: ended }));
    assert.deepEqual([done.exit_code, done.output, done.duration_ms], [0, 'a.txt\n', 12]);
    assert.equal('output_index' in done, false, 'the item\'s index in its turn is the events\' business');
  });

  it('end completed when the command exited (whatever its code), incomplete when it did not run to its end', () => {
    assert.equal(commandEnding({ command: 'false', cwd: '/workspace', exitCode: 1, output: '', durationMs: 3 }).status, 'completed');
    assert.equal(commandEnding({ command: 'sleep 99', cwd: '/workspace', exitCode: null, output: '[killed: time limit]', durationMs: 1000 }).status, 'incomplete');
    assert.deepEqual(commandNotRun(OUTCOME_UNKNOWN), { status: 'incomplete', cwd: '/workspace', exit_code: null, output: OUTCOME_UNKNOWN, duration_ms: null });
  });

  it('reach the model as a tool call and its output, exactly as a function_call does', () => {
    const output = item('function_call_output', 'completed', { type: 'function_call_output', call_id: 'call_1', output: 'exit code 0\na.txt' });
    const asCommand = toModelMessages([item('command_execution', 'completed', { type: 'function_call', ...shellCall, command_execution: { ...record, exit_code: 0, output: 'a.txt' } }), output]);
    const asFunction = toModelMessages([item('function_call', 'completed', { type: 'function_call', ...shellCall }), output]);
    assert.deepEqual(asCommand, asFunction);
  });

  it('are never run again by a takeover: a command started without a result gets outcome_unknown, a read runs again', () => {
    const policy = toolPolicy(harnessTools(), 'default', []);
    const model = (calls: ToolCallSpec[]): CommittedStep => ({ runId: 'r1', kind: 'model_call', status: 'completed', ref: null, output: { text: '', tool_calls: calls } });
    const started = (id: string): CommittedStep => ({ runId: 'r1', kind: 'tool_call', status: 'started', ref: id, output: {} });
    assert.deepEqual(planNextStep([model([shellCall]), started('call_1')], policy), { action: 'record', call: shellCall, outcome: { success: false, output: OUTCOME_UNKNOWN }, started: true });
    const read: ToolCallSpec = { call_id: 'call_2', name: 'read_file', arguments: '{"path":"a.txt"}' };
    assert.deepEqual(planNextStep([model([read]), started('call_2')], policy), { action: 'execute', call: read, args: { path: 'a.txt' }, started: true });
  });

  it('run in the session\'s workspace with its owner and workdir, the turn and the call; output streams live on the item; the record ends it', async () => {
    const calls: HarnessCall[] = [];
    const environments = {
      execute: async (call: HarnessCall) => {
        calls.push(call);
        call.onOutput?.('a.txt\n');
        return { success: true, output: 'a.txt\n', command: { command: 'ls', cwd: '/workspace', exitCode: 0, output: 'a.txt\n', durationMs: 5 } };
      },
    };
    const { sut, mocks } = newTestService(HarnessCalls, [[SessionEnvironments, environments]]);
    mocks.get(ItemsRepository).commandScope.mock.mockImplementation(async () => ({ ownerId: 'u1', workdirId: 'w1', outputIndex: 3 }));
    const pushed: OutgoingEvent[] = [];
    let drained = 0;
    const state = {
      held: { turn: { id: 'turn_1', sessionId: 's1', seq: 4 }, config: ENV },
      lease: { runId: 'run_1' },
      live: { push: (...events: OutgoingEvent[]) => pushed.push(...events), drain: async () => void (drained += 1) },
    } as never;
    const shell = harnessTools().find((t) => t.name === 'shell')!;
    const call = sut.start(state, shell, { call: shellCall, args: { command: 'ls' } });
    assert.ok(call instanceof CallInFlight);
    const next = await call.next();
    assert.ok('outcome' in next);
    assert.deepEqual(next.outcome, { success: true, output: 'a.txt\n', command: { status: 'completed', cwd: '/workspace', exit_code: 0, output: 'a.txt\n', duration_ms: 5 } });
    const [sent] = calls;
    assert.deepEqual(sent!.session, { id: 's1', ownerId: 'u1', workdirId: 'w1' });
    assert.deepEqual([sent!.turnId, sent!.callId, sent!.tool, sent!.args, sent!.environment], ['turn_1', 'call_1', 'shell', { command: 'ls' }, ENV.environment]);
    assert.equal(sent!.signal, call.controller.signal, 'a cancel or a lost lease aborts it');
    assert.deepEqual(pushed, [
      { type: 'agent.output.command_execution_output.delta', turn_id: 'turn_1', item_id: commandItemId('turn_1', 'call_1'), output_index: 3, delta: 'a.txt\n', yuxi: { run_id: 'run_1' } },
    ]);
    assert.equal(drained, 1, 'every delta is out before the result is recorded');
    assert.deepEqual(mocks.get(ItemsRepository).commandScope.mock.calls[0]!.arguments, ['s1', commandItemId('turn_1', 'call_1')]);
  });

  it('a harness call in a session without an environment is an error output, never a run', () => {
    const { sut } = newTestService(HarnessCalls, [[SessionEnvironments, { execute: () => assert.fail('not run') }]]);
    const state = { held: { turn: { id: 'turn_1', sessionId: 's1' }, config: {} }, lease: { runId: 'run_1' } } as never;
    const outcome = sut.start(state, harnessTools()[0]!, { call: shellCall, args: { command: 'ls' } });
    assert.deepEqual(outcome, { success: false, output: 'shell error: this session has no environment' });
  });
});
