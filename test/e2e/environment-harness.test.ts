import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import OpenAI from 'openai';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { until } from '../support/identity.js';
import { type SseEvent, SseStream } from '../support/sse.js';
import { completedFollowUp } from '../support/scenarios.js';

// A session with an environment end to end, on the real stack (real bubblewrap sandboxes): a
// scripted agent runs `shell`, writes and patches files, reads them back the next turn; its
// command_execution items and their live output; the files as artifacts through the API and the
// official SDK; a member of a tree reads what its root wrote.

const HOSTED = { type: 'openai_hosted' };
const tool = (name: string, args: object): string => `[[tool:${name} ${JSON.stringify(args)}]]`;

describe('environments: the harness in a session\'s workspace', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  /** A session with a workspace, its stream open before its first message (live events are not replayed). */
  async function hosted(agentId = 'default-chatbot'): Promise<{ id: string; stream: SseStream }> {
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey('env'), body: { agent_id: agentId, environment: HOSTED } });
    assert.equal(res.status, 201, res.text);
    const stream = await SseStream.open(res.body.id);
    streams.push(stream);
    return { id: res.body.id, stream };
  }

  const turn = completedFollowUp;

  const turnItems = async (sessionId: string, turnId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
  const outputOf = (items: any[], call: any): any => items.find((i) => i.type === 'function_call_output' && i.call_id === call.call_id);

  it('runs shell, write_file and apply_patch, and reads the files back the next turn (items, live output, turn details)', async () => {
    const session = await hosted();
    const patch = '--- a/notes/b.md\n+++ b/notes/b.md\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n';
    const first = await turn(
      session,
      `${tool('shell', { command: 'echo hi > a.txt && ls' })} ${tool('write_file', { path: 'notes/b.md', content: 'one\ntwo\n' })} ${tool('apply_patch', { patch })}`,
    );
    const items = await turnItems(session.id, first.data.turn_id);
    const command = items.find((i) => i.type === 'command_execution');
    assert.ok(command, `a command_execution item: ${JSON.stringify(items.map((i) => i.type))}`);
    assert.deepEqual(
      [command.status, command.name, command.command, command.cwd, command.exit_code, command.output, command.turn_id],
      ['completed', 'shell', 'echo hi > a.txt && ls', '/workspace', 0, 'a.txt\n', first.data.turn_id],
    );
    assert.ok(Number.isInteger(command.duration_ms) && command.duration_ms >= 0, `duration_ms: ${command.duration_ms}`);
    assert.equal(outputOf(items, command).output, 'a.txt\n', 'the model reads the output, as for every call');
    // Each call is a tool call of the turn; in the usage ledger the shell is a sandbox command, its wall time the command's duration.
    assert.equal(first.data.turn.yuxi.usage.tool_calls, 3);
    const ledger = await query(`SELECT kind, tool, wall_ms::int AS wall_ms FROM usage_ledger WHERE turn_id = $1 AND tool_calls = 1 ORDER BY tool`, [first.data.turn_id]);
    assert.deepEqual(ledger.map((r) => [r.kind, r.tool]), [['tool_call', 'apply_patch'], ['command', 'shell'], ['tool_call', 'write_file']]);
    assert.equal(ledger[1].wall_ms, command.duration_ms);
    for (const name of ['write_file', 'apply_patch']) {
      const call = items.find((i) => i.type === 'function_call' && i.name === name);
      assert.ok(call, `${name} is a function_call item`);
      assert.equal(outputOf(items, call).yuxi.success, true, `${name}: ${outputOf(items, call).output}`);
    }

    // On the stream: the item added in progress, its live output, then done with its result.
    const ofCommand = session.stream.events.filter((e) => e.data.item_id === command.id || e.data.item?.id === command.id);
    const types = ofCommand.map((e) => e.type);
    assert.equal(types[0], 'agent.session.turn.item.added');
    assert.equal(ofCommand[0]!.data.item.status, 'in_progress');
    assert.equal(ofCommand[0]!.data.item.exit_code, null);
    assert.equal(types.at(-1), 'agent.session.turn.item.done');
    assert.deepEqual([ofCommand.at(-1)!.data.item.status, ofCommand.at(-1)!.data.item.exit_code], ['completed', 0]);
    const deltas = ofCommand.filter((e) => e.type === 'agent.output.command_execution_output.delta');
    assert.ok(deltas.length > 0, `live output deltas: ${types.join(', ')}`);
    assert.equal(deltas.map((e) => e.data.delta).join(''), 'a.txt\n');
    for (const delta of deltas) {
      assert.deepEqual([delta.data.session_id, delta.data.turn_id, delta.data.output_index], [session.id, first.data.turn_id, ofCommand[0]!.data.output_index]);
      assert.equal(typeof delta.data.event_id, 'string');
    }
    const detail = await http(`${API}/sessions/${session.id}/turns/${first.data.turn_id}`);
    assert.equal(detail.status, 200);

    // The next turn reads what the first wrote: by path, and with a command.
    const second = await turn(session, `${tool('read_file', { path: 'notes/b.md' })} ${tool('shell', { command: 'cat a.txt notes/b.md' })}`);
    const later = await turnItems(session.id, second.data.turn_id);
    const read = later.find((i) => i.type === 'function_call' && i.name === 'read_file');
    assert.equal(outputOf(later, read).output, 'one\nthree\n');
    const cat = later.find((i) => i.type === 'command_execution');
    assert.deepEqual([cat.status, cat.exit_code, cat.output], ['completed', 0, 'hi\none\nthree\n']);
    const answer = later.filter((i) => i.role === 'assistant').at(-1);
    assert.equal(answer.content[0].text, 'Tool shell returned: hi one three');

    // The items lists show the command with its fields.
    const all = (await http(`${API}/sessions/${session.id}/items?order=asc&limit=100`)).body.data;
    assert.deepEqual(all.filter((i: any) => i.type === 'command_execution').map((i: any) => [i.command, i.exit_code]), [['echo hi > a.txt && ls', 0], ['cat a.txt notes/b.md', 0]]);

    // A failing command is completed with its exit code; the call fails for the model.
    const third = await turn(session, tool('shell', { command: 'echo oops >&2; exit 3' }));
    const failed = (await turnItems(session.id, third.data.turn_id)).find((i) => i.type === 'command_execution');
    assert.deepEqual([failed.status, failed.exit_code, failed.output], ['completed', 3, 'oops\n']);

    // The files are artifacts: through the API, and through the official SDK.
    const listed = await http(`${API}/sessions/${session.id}/artifacts?limit=100`);
    assert.equal(listed.status, 200, listed.text);
    const paths = listed.body.data.map((a: any) => a.path);
    assert.ok(paths.includes('/workspace/a.txt'), `artifacts: ${paths.join(', ')}`);
    // A file written then patched in one turn is one artifact, holding the patched content.
    const versions = listed.body.data.filter((a: any) => a.path === '/workspace/notes/b.md').sort((x: any, y: any) => x.size_bytes - y.size_bytes);
    assert.deepEqual(versions.map((a: any) => a.size_bytes), ['one\nthree\n'.length]);
    const notes = versions[0];
    assert.equal(notes.object, 'agent.session.artifact');
    const content = await fetch(`${env.apiUrl}${API}/sessions/${session.id}/artifacts/${notes.id}/content`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    assert.equal(content.status, 200);
    assert.equal(await content.text(), 'one\nthree\n');

    const client = new OpenAI({ apiKey: env.apiKey, baseURL: `${env.apiUrl}/api/v1`, maxRetries: 0 });
    const viaSdk: string[] = [];
    for await (const artifact of client.beta.agents.sessions.artifacts.list(session.id)) viaSdk.push(artifact.path);
    assert.deepEqual(viaSdk.sort(), [...paths].sort(), 'the SDK lists the same artifacts');
    const bytes = await client.beta.agents.sessions.artifacts.content(notes.id, { session_id: session.id });
    assert.equal(await bytes.text(), 'one\nthree\n');
  });

  it('asks before a command under always_ask: rejected, it never runs and its item ends incomplete; a cancel while it waits ends it too', async () => {
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey('ask'), body: { agent_id: 'default-chatbot', environment: HOSTED, tool_approval_mode: 'always_ask' } });
    assert.equal(res.status, 201, res.text);
    const stream = await SseStream.open(res.body.id);
    streams.push(stream);
    const ask = async (command: string): Promise<{ waiting: SseEvent; item: any }> => {
      const before = stream.events.length;
      assert.equal((await postEvent(res.body.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: tool('shell', { command }) })).status, 202);
      const waiting = await stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && stream.events.indexOf(e) >= before, 30_000);
      assert.equal(waiting.data.waitpoint.kind, 'approval');
      const item = (await turnItems(res.body.id, waiting.data.turn_id)).find((i) => i.type === 'command_execution');
      assert.deepEqual([item.status, item.command, item.exit_code], ['in_progress', command, null], 'the command waits for its approval');
      return { waiting, item };
    };

    const first = await ask('echo approved? > never.txt');
    const decided = await postEvent(res.body.id, {
      type: 'yuxi.session.input.resume',
      turn_id: first.waiting.data.turn_id,
      waitpoint_id: first.waiting.data.waitpoint.id,
      response: { type: 'approval', decisions: [{ call_id: first.item.call_id, decision: 'reject', message: 'not now' }] },
    });
    assert.equal(decided.status, 202, decided.text);
    await stream.waitForType('agent.session.turn.completed', first.waiting.data.turn_id, 30_000);
    const rejected = (await turnItems(res.body.id, first.waiting.data.turn_id)).find((i) => i.type === 'command_execution');
    assert.equal(rejected.status, 'incomplete');
    assert.equal(rejected.exit_code, null);
    assert.match(rejected.output, /rejected/);

    const second = await ask('echo nope');
    assert.equal((await postEvent(res.body.id, { type: 'agent.session.input.cancel' })).status, 202);
    await stream.waitForType('agent.session.turn.cancelled', second.waiting.data.turn_id, 30_000);
    const cancelled = (await turnItems(res.body.id, second.waiting.data.turn_id)).find((i) => i.type === 'command_execution');
    assert.deepEqual([cancelled.status, cancelled.exit_code], ['incomplete', null]);
    assert.match(cancelled.output, /cancelled/);
    const done = stream.events.find((e) => e.type === 'agent.session.turn.item.done' && e.data.item.id === cancelled.id);
    assert.equal(done?.data.item.status, 'incomplete', 'announced done on the stream');
  });

  it('a cancel mid-command stops it; its item ends incomplete (no item stays in progress)', async () => {
    const session = await hosted();
    const before = session.stream.events.length;
    assert.equal((await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: tool('shell', { command: 'echo started; sleep 30' }) })).status, 202);
    const delta = await session.stream.waitFor((e) => e.type === 'agent.output.command_execution_output.delta' && session.stream.events.indexOf(e) >= before, 30_000);
    assert.equal(delta.data.delta, 'started\n');
    assert.equal((await postEvent(session.id, { type: 'agent.session.input.cancel' })).status, 202);
    await session.stream.waitForType('agent.session.turn.cancelled', delta.data.turn_id, 30_000);
    const item = (await turnItems(session.id, delta.data.turn_id)).find((i) => i.type === 'command_execution');
    assert.equal(item.id, delta.data.item_id);
    // Stopped by the cancel (the sandbox says so), never left in progress.
    assert.deepEqual([item.status, item.exit_code], ['incomplete', null]);
    assert.match(item.output, /^started\n[\s\S]*stopped/);
  });

  it('offers no harness tool to a session without an environment (a shell call is an unknown tool)', async () => {
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey('plain'), body: { agent_id: 'default-chatbot' } });
    const stream = await SseStream.open(res.body.id);
    streams.push(stream);
    const end = await turn({ id: res.body.id, stream }, tool('shell', { command: 'echo hi' }));
    const items = await turnItems(res.body.id, end.data.turn_id);
    assert.equal(items.some((i) => i.type === 'command_execution'), false);
    assert.equal(items.find((i) => i.type === 'function_call_output').output, 'Unknown tool shell');
  });

  it('a member of a tree reads what its root wrote (one workspace per tree)', async () => {
    const root = await hosted('coordinator');
    const task = tool('shell', { command: 'cat shared.txt' });
    await turn(root, `${tool('write_file', { path: 'shared.txt', content: 'from the root\n' })} ${tool('create_subagent', { task, name: 'reader' })} ${tool('wait_subagents', {})}`);
    const tree = async (): Promise<any[]> => (await http(`${API}/sessions?root_session_id=${root.id}&order=asc`)).body.data;
    const member = await until(async () => (await tree()).find((s: any) => s.id !== root.id), { attempts: 150 });
    assert.ok(member, 'the member was created');
    const memberItems = (await http(`${API}/sessions/${member.id}/items?order=asc&limit=100`)).body.data;
    const cat = memberItems.find((i: any) => i.type === 'command_execution');
    assert.ok(cat, `the member ran the command: ${JSON.stringify(memberItems.map((i: any) => i.type))}`);
    assert.deepEqual([cat.status, cat.exit_code, cat.output], ['completed', 0, 'from the root\n']);
  });
});
