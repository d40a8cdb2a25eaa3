import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { createSessionWith } from '../support/agents.js';
import { query } from '../support/db.js';
import { API, http, postEvent, sendMessage } from '../support/http.js';
import { call, newProductUser } from '../support/identity.js';
import { type SseEvent, SseStream } from '../support/sse.js';

// Cooperation trees end to end (README "Cooperation: subagents and trees"): a coordinator's
// scripted model creates members through `[[tool:…]]` directives (several run as successive tool
// calls), waits for them, and continues with their answers; members are full sessions.
describe('cooperation trees', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);
  const open = async (sessionId: string): Promise<SseStream> => {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    return stream;
  };
  const ended = (stream: SseStream, timeoutMs = 30_000): Promise<SseEvent> => stream.waitFor((e) => TERMINAL.has(e.type), timeoutMs);
  const items = async (sessionId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/items?order=asc&limit=100`)).body.data;
  const tree = async (rootId: string): Promise<any[]> => (await http(`${API}/sessions?root_session_id=${rootId}&order=asc`)).body.data;
  const state = async (sessionId: string): Promise<any> => (await http(`${API}/sessions/${sessionId}/state`)).body;
  const create = (task: string, name: string): string => `[[tool:create_subagent {"task":"${task}","name":"${name}"}]]`;

  /** Polls until `check` holds (bounded: 150 tries, 100 ms apart). */
  const until = async <T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> => {
    for (let i = 0; i < 150; i += 1) {
      const value = await read();
      if (check(value)) return value;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  it('spawns three members, waits for them, and answers with their answers (items, events, links, member streams)', async () => {
    const coordinator = await createSessionWith('coordinator', `${create('alpha', 'a')} ${create('beta', 'b')} ${create('gamma', 'c')} [[tool:wait_subagents {}]]`);
    const stream = await open(coordinator.id);
    const end = await ended(stream);
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));

    const own = await items(coordinator.id);
    const calls = own.filter((i) => i.type === 'create_subagent_call');
    assert.deepEqual(calls.map((c) => c.task), ['alpha', 'beta', 'gamma']);
    for (const call of calls) {
      assert.equal(call.name, 'create_subagent');
      const output = own.find((i) => i.type === 'function_call_output' && i.call_id === call.call_id);
      assert.ok(output, `the output of ${call.call_id}`);
      assert.equal(JSON.parse(output.output).subagent_id, call.yuxi.subagent_session_id);
    }
    const wait = own.find((i) => i.type === 'wait_subagents_call');
    assert.ok(wait, 'the wait call is an item of its own type');
    const waited = JSON.parse(own.find((i) => i.type === 'function_call_output' && i.call_id === wait.call_id).output);
    assert.deepEqual(waited.subagents.map((m: any) => [m.name, m.status, m.answer]), [
      ['a', 'completed', 'Echo: alpha'],
      ['b', 'completed', 'Echo: beta'],
      ['c', 'completed', 'Echo: gamma'],
    ]);
    const answer = own.at(-1);
    assert.equal(answer.phase, 'final_answer');
    const text = answer.content[0].text as string;
    for (const word of ['alpha', 'beta', 'gamma']) assert.ok(text.includes(`Echo: ${word}`), text);

    const created = stream.events.filter((e) => e.type === 'agent.session.subagent.created');
    assert.deepEqual(created.map((e) => e.data.subagent.name), ['a', 'b', 'c']);
    const settled = await until(async () => stream.events.filter((e) => e.type === 'yuxi.session.subagent.state'), (s) => s.length === 3, 'three member states');
    assert.deepEqual(settled.map((e) => e.data.status), ['completed', 'completed', 'completed']);
    // Whether the wait stopped the run depends on how fast the echo members were (it resolves at once
    // when all have ended): the cooperation waitpoint is asserted where a slow member makes it certain.

    const members = (await tree(coordinator.id)).filter((s) => s.id !== coordinator.id);
    assert.equal(members.length, 3);
    for (const [index, member] of members.entries()) {
      assert.equal(member.yuxi.parent_session_id, coordinator.id);
      assert.equal(member.yuxi.root_session_id, coordinator.id);
      assert.equal(member.yuxi.depth, 1);
      assert.deepEqual(member.yuxi.spawned_by, { turn_id: end.data.turn.id, call_id: calls[index].call_id });
      assert.equal(member.id, calls[index].yuxi.subagent_session_id);
      const memberStream = await open(member.id);
      const memberEnd = await ended(memberStream);
      assert.equal(memberEnd.type, 'agent.session.turn.completed');
      assert.equal(memberStream.events[0]?.type, 'agent.session.created');
    }
    // The default list shows roots only.
    const roots = (await http(`${API}/sessions?limit=100`)).body.data.map((s: any) => s.id);
    assert.ok(roots.includes(coordinator.id));
    assert.ok(!members.some((m) => roots.includes(m.id)), 'members are listed through their tree only');
    const cooperation = (await state(members[0].id)).agent_state.cooperation;
    assert.equal(cooperation.root_session_id, coordinator.id);
    assert.equal(cooperation.members.length, 3);
    assert.ok(cooperation.usage.total_tokens > 0);
    // The tree's usage is its ledger summed over the root: the root's and every member's own usage.
    const sessionUsage = async (id: string): Promise<any> => (await http(`${API}/sessions/${id}`)).body.yuxi.usage;
    const sumOfSessions = async (): Promise<Record<string, number>> => {
      const all = await Promise.all([coordinator.id, ...members.map((m) => m.id)].map(sessionUsage));
      return Object.fromEntries(['input_tokens', 'output_tokens', 'total_tokens', 'model_calls', 'tool_calls'].map((key) => [key, all.reduce((sum, u) => sum + u[key], 0)]));
    };
    const agreed = await until(
      async () => ({ tree: (await state(coordinator.id)).agent_state.cooperation.usage, sessions: await sumOfSessions() }),
      ({ tree, sessions }) => Object.entries(sessions).every(([key, value]) => tree[key] === value),
      'the tree\'s usage to be the sum of its sessions\'',
    );
    assert.ok(agreed.tree.model_calls >= 4, 'the coordinator\'s and each member\'s model calls');
    assert.ok(agreed.tree.tool_calls >= 3, 'the three create_subagent calls');
  });

  it('caps running members at max_concurrent_subagents: the rest wait queued, never more than the cap run, all finish', async () => {
    const tasks = ['one', 'two', 'three', 'four', 'five'].map((task) => create(`[[delay:60]] [[words:12]] ${task}`.replaceAll('"', '\\"'), task)).join(' ');
    const coordinator = await createSessionWith('coordinator', `${tasks} [[tool:wait_subagents {}]]`);
    const stream = await open(coordinator.id);
    let sawQueued = false;
    for (let i = 0; i < 300 && !stream.events.some((e) => TERMINAL.has(e.type)); i += 1) {
      const members = (await state(coordinator.id)).agent_state.cooperation?.members ?? [];
      const running = members.filter((m: any) => m.status === 'in_progress').length;
      assert.ok(running <= 2, `${running} members run at once`);
      sawQueued ||= members.some((m: any) => m.status === 'queued');
      await sleep(50);
    }
    const end = await ended(stream);
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));
    assert.ok(sawQueued, 'members beyond the cap showed queued');
    // When any member run started, at most the cap of them (itself included) were running.
    const runs = await query<{ started_at: Date; completed_at: Date }>(
      `SELECT r.started_at, r.completed_at FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.parent_session_id = $1`,
      [coordinator.id],
    );
    assert.equal(runs.length, 5);
    for (const run of runs) {
      const running = runs.filter((other) => other.started_at <= run.started_at && other.completed_at > run.started_at).length;
      assert.ok(running <= 2, `${running} member runs were running at once`);
    }
  });

  it('caps the creates of one coordinator turn and the members of a tree: further creates are told so in their output, the turn goes on', async () => {
    // The suite's worker runs with MAX_SUBAGENT_CREATES_PER_TURN=5 and MAX_SUBAGENTS_PER_TREE=6 (scripts/test.mjs).
    const names = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'];
    const coordinator = await createSessionWith('coordinator', `${names.map((name) => create(`task ${name}`, name)).join(' ')} [[tool:wait_subagents {}]]`);
    const stream = await open(coordinator.id);
    const end = await ended(stream);
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));
    const outputsOf = (list: any[]): string[] =>
      list.filter((i) => i.type === 'create_subagent_call').map((c) => list.find((i) => i.type === 'function_call_output' && i.call_id === c.call_id)?.output ?? '');
    const first = outputsOf(await items(coordinator.id));
    assert.equal(first.length, 7);
    assert.deepEqual(first.slice(0, 5).map((o) => JSON.parse(o).name), ['c1', 'c2', 'c3', 'c4', 'c5']);
    for (const refused of first.slice(5)) assert.match(refused, /^create_subagent refused: this turn already created 5 subagents, the most one turn may create \(5\)/);
    assert.equal((await tree(coordinator.id)).length, 6, 'the root and the five members created');

    // A later turn may create again, until the tree holds its six.
    assert.equal((await sendMessage(coordinator.id, `${create('task d1', 'd1')} ${create('task d2', 'd2')} [[tool:wait_subagents {}]]`)).status, 202);
    const turns = await until(
      async () => (await http(`${API}/sessions/${coordinator.id}/turns?order=asc`)).body.data,
      (list: any[]) => list.length === 2 && ['completed', 'failed', 'cancelled'].includes(list[1].status),
      'the second turn to end',
    );
    assert.equal(turns[1].status, 'completed');
    const second = outputsOf(await items(coordinator.id)).slice(7);
    assert.equal(JSON.parse(second[0]!).name, 'd1');
    assert.match(second[1]!, /^create_subagent refused: this cooperation tree already has 6 subagents, the most a tree may have \(6\)/);
    assert.equal((await tree(coordinator.id)).length, 7, 'the root and six members');
  });

  it('members never get the coordinator\'s function tools; they keep its builtin ones', async () => {
    const coordinator = await createSessionWith('coordinator-fn', `${create('[[tool:my_fn {}]]'.replaceAll('"', '\\"'), 'f')} [[tool:wait_subagents {}]]`);
    const stream = await open(coordinator.id);
    assert.equal((await ended(stream)).type, 'agent.session.turn.completed');
    const [member] = (await tree(coordinator.id)).filter((s) => s.id !== coordinator.id);
    const snapshot = await query<{ agent_snapshot: any }>(`SELECT agent_snapshot FROM sessions WHERE id = $1`, [member.id]);
    assert.deepEqual(snapshot[0]!.agent_snapshot.tools.map((t: any) => t.type), ['builtin']);
    const output = (await items(member.id)).find((i) => i.type === 'function_call_output');
    assert.equal(output.output, 'Unknown tool my_fn');
  });

  it('during a cooperation wait a message queues as a follow-up, while steer and promote are refused (409)', async () => {
    const coordinator = await createSessionWith('coordinator', `${create('[[delay:300]] [[words:10]] slow'.replaceAll('"', '\\"'), 's')} [[tool:wait_subagents {}]]`);
    const stream = await open(coordinator.id);
    await stream.waitFor((e) => e.type === 'yuxi.session.turn.state' && e.data.turn.yuxi.waitpoint?.kind === 'cooperation', 20_000);
    const followUp = await sendMessage(coordinator.id, 'after the wait');
    assert.equal(followUp.status, 202);
    const steer = await postEvent(coordinator.id, { type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: 'now' }] }], yuxi: { mode: 'steer' } });
    assert.equal(steer.status, 409);
    assert.equal(steer.body.error.code, 'state_conflict');
    const promote = await postEvent(coordinator.id, { type: 'yuxi.session.input.promote', input_id: followUp.body.input_id });
    assert.equal(promote.status, 409);
    const first = await ended(stream);
    assert.equal(first.type, 'agent.session.turn.completed');
    const second = await stream.waitFor((e) => TERMINAL.has(e.type) && e.data.turn.id !== first.data.turn.id, 20_000);
    assert.equal(second.type, 'agent.session.turn.completed');
    assert.equal((await items(coordinator.id)).at(-1).content[0].text, 'Echo: after the wait');
  });

  it('tree stop from a member cancels every active turn and pauses every queue; continue resumes them; a message lifts only its member', async () => {
    const slow = (name: string): string => create('[[delay:400]] [[words:20]] '.replaceAll('"', '\\"') + name, name);
    const coordinator = await createSessionWith('coordinator', `${slow('a')} ${slow('b')} ${slow('c')} [[tool:wait_subagents {}]]`);
    const stream = await open(coordinator.id);
    await stream.waitFor((e) => e.type === 'yuxi.session.turn.state' && e.data.turn.yuxi.waitpoint?.kind === 'cooperation', 20_000);
    const members = (await tree(coordinator.id)).filter((s) => s.id !== coordinator.id);
    const [a, b, c] = members.map((m) => m.id as string);
    // a and b run (cap 2), c waits queued; a gets a follow-up behind its running turn.
    await until(() => state(coordinator.id), (s) => s.agent_state.cooperation.members.filter((m: any) => m.status === 'in_progress').length === 2, 'two members running');
    assert.equal((await sendMessage(a!, 'later for a')).status, 202);

    const stop = await postEvent(b!, { type: 'yuxi.session.tree.stop' });
    assert.equal(stop.status, 202, stop.text);
    assert.equal(stop.body.session_id, b);
    const stopped = await until(() => state(coordinator.id), (s) => s.agent_state.cooperation.stopped && !s.agent_state.cooperation.stopping, 'the stop to settle');
    const statuses = Object.fromEntries(stopped.agent_state.cooperation.members.map((m: any) => [m.session_id, m]));
    assert.equal(statuses[a!].status, 'cancelled');
    assert.equal(statuses[b!].status, 'cancelled');
    assert.ok(statuses[c!].queue_paused && statuses[c!].current_turn_id === null, 'the queued member never started');
    const coordinatorTurn = (await http(`${API}/sessions/${coordinator.id}/turns?limit=1`)).body.data[0];
    assert.equal(coordinatorTurn.status, 'cancelled');
    assert.equal((await query(`SELECT count(*)::int AS n FROM turns WHERE session_id = $1`, [c])).at(0).n, 0);

    // A message to b lifts b's gate only: it runs while a's follow-up and c stay paused.
    assert.equal((await sendMessage(b!, 'only b')).status, 202);
    await until(() => items(b!), (list) => list.at(-1)?.content?.[0]?.text === 'Echo: only b', 'b to answer');
    assert.equal((await state(a!)).queue_paused, true);
    assert.equal((await state(c!)).queue_paused, true);

    const cont = await postEvent(coordinator.id, { type: 'yuxi.session.tree.continue' });
    assert.equal(cont.status, 202, cont.text);
    await until(() => items(a!), (list) => list.at(-1)?.content?.[0]?.text === 'Echo: later for a', 'a\'s follow-up to run');
    await until(() => state(c!), (s) => s.status === 'completed', 'c to run');
    const aTurns = (await http(`${API}/sessions/${a}/turns?order=asc`)).body.data.map((t: any) => t.status);
    assert.deepEqual(aTurns, ['cancelled', 'completed'], 'a cancelled turn stays cancelled');
    const again = await postEvent(coordinator.id, { type: 'yuxi.session.tree.continue' });
    assert.equal(again.status, 409);
  });

  it('tree controls of another owner\'s tree are 404, and malformed ones 422', async () => {
    const coordinator = await createSessionWith('coordinator', 'hello');
    const { caller } = await newProductUser('tree stranger');
    for (const type of ['yuxi.session.tree.stop', 'yuxi.session.tree.continue']) {
      const foreign = await call(caller, `${API}/sessions/${coordinator.id}/events`, { body: { events: [{ type }] }, idempotencyKey: `k-${type}` });
      assert.equal(foreign.status, 404, type);
    }
    assert.deepEqual((await call(caller, `${API}/sessions?root_session_id=${coordinator.id}`)).body.data, []);
    const extra = await postEvent(coordinator.id, { type: 'yuxi.session.tree.stop', yuxi: { all: true } });
    assert.equal(extra.status, 422);
    assert.equal(extra.body.error.code, 'validation_failed');
    const notStopped = await postEvent(coordinator.id, { type: 'yuxi.session.tree.continue' });
    assert.equal(notStopped.status, 409);
  });

  it('refuses a malformed multi_agent (422 invalid_agent, every field named) and a malformed root_session_id filter (422), storing nothing', async () => {
    const id = `t-bad-${Date.now().toString(36)}`;
    const put = await http(`/api/v1/admin/agents/${id}`, {
      method: 'PUT',
      body: { name: 'bad coordinator', model: 'scripted:echo', multi_agent: { enabled: 1, max_concurrent_subagents: 0, max_depth: 9, agents: ['Not An Id'], extra: true } },
    });
    assert.equal(put.status, 422, put.text);
    assert.equal(put.body.error.code, 'invalid_agent');
    const fields = (put.body.error.details.fields as any[]).map((f) => f.field).sort();
    assert.deepEqual(fields, ['multi_agent.agents', 'multi_agent.enabled', 'multi_agent.extra', 'multi_agent.max_concurrent_subagents', 'multi_agent.max_depth']);
    assert.equal((await http(`${API}/${id}`)).status, 404, 'nothing was stored');
    const list = await http(`${API}/sessions?root_session_id=not-a-uuid`);
    assert.equal(list.status, 422);
    assert.equal(list.body.error.code, 'validation_failed');
  });
});
