import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, putAgent } from '../support/agents.js';
import { uploadDraft } from '../support/files.js';
import { API, http, postEvent, sendMessage } from '../support/http.js';
import { type SseEvent, SseStream } from '../support/sse.js';

/**
 * A coordinator's calls on its members end to end (message_subagent, interrupt_subagent), what
 * members do when their parent's turn ends without them, tree controls on the streams, and the
 * workdir a tree shares. Members that wait for a person (`[[ask:…]]`) are busy for as long as the
 * test wants, so no assertion depends on how fast anything ran.
 */
describe('cooperation: members and their coordinator', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));
  const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);

  /** A coordinator agent of this file: scripted, with files and questions, members of its own kind. */
  let coordinatorAgent: string;
  /** The same, but a turn may make one tool call only: its second fails the turn. */
  let oneCallAgent: string;
  /** The same, one member running at a time. */
  let capOneAgent: string;
  before(async () => {
    const tools = ['list_files', 'read_file', 'ask_user'].map((name) => ({ type: 'builtin', name }));
    coordinatorAgent = (await putAgent({ model: 'scripted:echo', tools, multi_agent: { enabled: true, max_concurrent_subagents: 3 } })).id;
    oneCallAgent = (await putAgent({ model: 'scripted:echo', tools, multi_agent: { enabled: true, max_concurrent_subagents: 3 }, limits: { max_tool_calls: 1 } })).id;
    capOneAgent = (await putAgent({ model: 'scripted:echo', tools, multi_agent: { enabled: true, max_concurrent_subagents: 1 } })).id;
  });

  const open = async (sessionId: string): Promise<SseStream> => {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    return stream;
  };
  const tool = (name: string, args: object = {}): string => `[[tool:${name} ${JSON.stringify(args)}]]`;
  const create = (task: string, name: string): string => tool('create_subagent', { task, name });
  const items = async (sessionId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/items?order=asc&limit=100`)).body.data;
  const turns = async (sessionId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/turns?order=asc`)).body.data;
  const member = async (rootId: string, name: string): Promise<any> => {
    const found = (await http(`${API}/sessions?root_session_id=${rootId}&order=asc`)).body.data.find((s: any) => s.yuxi.subagent?.name === name);
    assert.ok(found, `member ${name}`);
    return found;
  };
  /** The output of each call of `type` in the session's items, in order. */
  const outputsOf = async (sessionId: string, type: string): Promise<string[]> => {
    const list = await items(sessionId);
    return list.filter((i) => i.type === type).map((c) => list.find((i) => i.type === 'function_call_output' && i.call_id === c.call_id)?.output ?? '');
  };
  /** Polls until `check` holds (bounded: 200 tries, 100 ms apart). */
  const until = async <T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> => {
    for (let i = 0; i < 200; i += 1) {
      const value = await read();
      if (check(value)) return value;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  /** The nth turn of the session once it has ended. */
  const endedTurn = (sessionId: string, index: number): Promise<any> =>
    until(() => turns(sessionId), (list) => list.length > index && ['completed', 'failed', 'cancelled'].includes(list[index].status), `turn ${index + 1} of ${sessionId} to end`).then((list) => list[index]);
  /** The member's question, once its turn waits for a person. */
  const question = (stream: SseStream): Promise<SseEvent> => stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && e.data.waitpoint?.kind === 'question', 30_000);
  const answer = (sessionId: string, waiting: SseEvent, text: string) =>
    postEvent(sessionId, {
      type: 'yuxi.session.input.resume',
      turn_id: waiting.data.turn_id,
      waitpoint_id: waiting.data.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: waiting.data.waitpoint.questions[0].question_id, answer: text }] },
    });

  it('message_subagent queues a further message for a member, which answers it; an unknown member is told in the output', async () => {
    const coordinator = await createSessionWith(coordinatorAgent, `${create('first task', 'm')} ${tool('wait_subagents')}`);
    assert.equal((await endedTurn(coordinator.id, 0)).status, 'completed');
    const m = await member(coordinator.id, 'm');

    const second = await sendMessage(coordinator.id, `${tool('message_subagent', { subagent_id: 'nobody', message: 'lost' })} ${tool('message_subagent', { subagent_id: 'm', message: 'second task' })} ${tool('wait_subagents')}`);
    assert.equal(second.status, 202, second.text);
    assert.equal((await endedTurn(coordinator.id, 1)).status, 'completed');

    const own = await items(coordinator.id);
    const calls = own.filter((i) => i.type === 'message_subagent_call');
    assert.deepEqual(calls.map((c) => [c.name, c.subagent_id, c.message]), [
      ['message_subagent', 'nobody', 'lost'],
      ['message_subagent', 'm', 'second task'],
    ]);
    const [unknown, sent] = await outputsOf(coordinator.id, 'message_subagent_call');
    assert.equal(unknown, 'Unknown subagent nobody: not one of yours');
    const receipt = JSON.parse(sent!);
    assert.deepEqual({ ...receipt, input_id: undefined }, { subagent_id: m.id, name: 'm', status: 'queued', input_id: undefined });
    const waited = JSON.parse((await outputsOf(coordinator.id, 'wait_subagents_call')).at(-1)!);
    assert.deepEqual(waited.subagents.map((s: any) => [s.name, s.status, s.answer]), [['m', 'completed', 'Echo: second task']]);

    // The member's side: the message is an input of its own, run as the member's second turn.
    const input = (await http(`${API}/sessions/${m.id}/inputs/${receipt.input_id}`)).body;
    assert.equal(input.status, 'consumed');
    assert.deepEqual((await turns(m.id)).map((t) => t.status), ['completed', 'completed']);
    const texts = (await items(m.id)).filter((i) => i.type === 'message' && i.role === 'assistant').map((i) => i.content[0].text);
    assert.deepEqual(texts, ['Echo: first task', 'Echo: second task']);
  });

  it('interrupt_subagent cancels what a member is doing; its queue waits until a message_subagent, then it works again', async () => {
    const coordinator = await createSessionWith(coordinatorAgent, create('[[ask:May I go on?]]', 's'));
    assert.equal((await endedTurn(coordinator.id, 0)).status, 'completed');
    const s = await member(coordinator.id, 's');
    const memberStream = await open(s.id);
    const waiting = await question(memberStream);

    // Interrupted while it works (its turn waits for a person); interrupted again, it is idle.
    assert.equal((await sendMessage(coordinator.id, `${tool('interrupt_subagent', { subagent_id: 's' })} ${tool('interrupt_subagent', { subagent_id: s.id })}`)).status, 202);
    assert.equal((await endedTurn(coordinator.id, 1)).status, 'completed');
    const calls = (await items(coordinator.id)).filter((i) => i.type === 'interrupt_subagent_call');
    assert.deepEqual(calls.map((c) => c.subagent_id), ['s', s.id]);
    const [first, againOutput] = await outputsOf(coordinator.id, 'interrupt_subagent_call');
    assert.deepEqual(JSON.parse(first!), { subagent_id: s.id, name: 's', status: 'cancelled', turn_id: waiting.data.turn_id });
    assert.deepEqual(JSON.parse(againOutput!), { subagent_id: s.id, name: 's', status: 'idle' });
    const cancelled = await memberStream.waitFor((e) => TERMINAL.has(e.type) && e.data.turn_id === waiting.data.turn_id, 20_000);
    assert.equal(cancelled.type, 'agent.session.turn.cancelled');
    // Its answer is refused now: the question went with the turn.
    assert.equal((await answer(s.id, waiting, 'too late')).status, 409);

    assert.equal((await sendMessage(coordinator.id, `${tool('message_subagent', { subagent_id: 's', message: 'start over' })} ${tool('wait_subagents')}`)).status, 202);
    assert.equal((await endedTurn(coordinator.id, 2)).status, 'completed');
    const waited = JSON.parse((await outputsOf(coordinator.id, 'wait_subagents_call')).at(-1)!);
    assert.deepEqual(waited.subagents.map((m: any) => [m.name, m.status, m.answer]), [['s', 'completed', 'Echo: start over']]);
    assert.deepEqual((await turns(s.id)).map((t) => t.status), ['cancelled', 'completed']);
  });

  it('interrupt_subagent pauses a member still queued behind the tree\'s cap: it never starts until a message_subagent, which runs first', async () => {
    // a holds the one slot while it waits for a person; b queues behind it.
    const coordinator = await createSessionWith(capOneAgent, `${create('[[ask:First?]]', 'a')} ${create('queued work', 'b')} ${tool('interrupt_subagent', { subagent_id: 'b' })}`);
    assert.equal((await endedTurn(coordinator.id, 0)).status, 'completed');
    const b = await member(coordinator.id, 'b');
    assert.deepEqual(JSON.parse((await outputsOf(coordinator.id, 'interrupt_subagent_call'))[0]!), { subagent_id: b.id, name: 'b', status: 'paused' });
    assert.equal((await http(`${API}/sessions/${b.id}`)).body.yuxi.queue_paused, true);

    // The slot frees: b stays paused. Read once the message has run (below): had the freed slot
    // started b's queued work, that turn would be b's first, before the message's.
    const a = await member(coordinator.id, 'a');
    const aStream = await open(a.id);
    const waiting = await question(aStream);
    assert.equal((await answer(a.id, waiting, 'done')).status, 202);
    await aStream.waitForType('agent.session.turn.completed', waiting.data.turn_id, 20_000);

    assert.equal((await sendMessage(coordinator.id, `${tool('message_subagent', { subagent_id: 'b', message: 'go now' })} ${tool('wait_subagents', { subagent_ids: ['b'] })}`)).status, 202);
    assert.equal((await endedTurn(coordinator.id, 1)).status, 'completed');
    const texts = (await items(b.id)).filter((i) => i.type === 'message' && i.role === 'assistant').map((i) => i.content[0].text);
    assert.deepEqual(texts, ['Echo: go now', 'Echo: queued work'], 'b stayed paused when the slot freed: the message ran alone first, then the queue it lifted');
  });

  it('a member keeps working when its parent\'s turn fails', async () => {
    // The create is the turn's one tool call; the list_files after it fails the turn.
    const coordinator = await createSessionWith(oneCallAgent, `${create('[[ask:Shall I finish?]]', 'w')} ${tool('list_files')}`);
    const parentTurn = await endedTurn(coordinator.id, 0);
    assert.equal(parentTurn.status, 'failed');
    assert.equal(parentTurn.error?.code, 'turn_tool_call_limit', JSON.stringify(parentTurn.error));
    const w = await member(coordinator.id, 'w');
    const memberStream = await open(w.id);
    const waiting = await question(memberStream);
    // Still its own work after the failure: its question is open, and answered it finishes.
    assert.equal((await http(`${API}/sessions/${w.id}`)).body.status, 'requires_action');
    assert.equal((await answer(w.id, waiting, 'yes please')).status, 202);
    const end = await memberStream.waitFor((e) => TERMINAL.has(e.type) && e.data.turn_id === waiting.data.turn_id, 20_000);
    assert.equal(end.type, 'agent.session.turn.completed');
    assert.equal((await items(w.id)).at(-1).content[0].text, 'Answer: yes please');
  });

  it('members keep working when their parent\'s turn is cancelled while it waits for them', async () => {
    const busy = create('[[delay:50]] [[words:40]] busy', 'busy');
    const coordinator = await createSessionWith(coordinatorAgent, `${create('[[ask:Keep going?]]', 'asker')} ${busy} ${tool('wait_subagents')}`);
    const stream = await open(coordinator.id);
    await stream.waitFor((e) => e.type === 'yuxi.session.turn.state' && e.data.turn.yuxi.waitpoint?.kind === 'cooperation', 30_000);
    const asker = await member(coordinator.id, 'asker');
    const askerStream = await open(asker.id);
    const waiting = await question(askerStream);

    assert.equal((await postEvent(coordinator.id, { type: 'agent.session.input.cancel' })).status, 202);
    assert.equal((await endedTurn(coordinator.id, 0)).status, 'cancelled');
    assert.equal((await http(`${API}/sessions/${asker.id}`)).body.status, 'requires_action', 'the member still waits for its answer');
    assert.equal((await answer(asker.id, waiting, 'sure')).status, 202);
    const end = await askerStream.waitFor((e) => TERMINAL.has(e.type) && e.data.turn_id === waiting.data.turn_id, 20_000);
    assert.equal(end.type, 'agent.session.turn.completed');
    const busyMember = await member(coordinator.id, 'busy');
    assert.equal((await endedTurn(busyMember.id, 0)).status, 'completed', 'the running member finished its work');
    assert.equal((await items(busyMember.id)).at(-1).content[0].text.split(' ').length, 40);
  });

  it('tree stop and continue publish no event on any stream of the tree (their receipts are the answers)', async () => {
    const coordinator = await createSessionWith(coordinatorAgent, `${create('[[ask:Hold on?]]', 'h')} ${tool('wait_subagents')}`);
    const rootStream = await open(coordinator.id);
    await rootStream.waitFor((e) => e.type === 'yuxi.session.turn.state' && e.data.turn.yuxi.waitpoint?.kind === 'cooperation', 30_000);
    const h = await member(coordinator.id, 'h');
    const memberStream = await open(h.id);
    await question(memberStream);

    const stop = await postEvent(h.id, { type: 'yuxi.session.tree.stop' });
    assert.equal(stop.status, 202, stop.text);
    await until(() => http(`${API}/sessions/${coordinator.id}/state`), (r) => r.body.agent_state.cooperation.stopped && !r.body.agent_state.cooperation.stopping, 'the stop to settle');
    const cont = await postEvent(coordinator.id, { type: 'yuxi.session.tree.continue' });
    assert.equal(cont.status, 202, cont.text);
    assert.notEqual(stop.body.event_id, cont.body.event_id);

    // A message to each session afterwards: once its receipt is on the stream, anything the
    // controls published would be before it.
    const marks = new Map<SseStream, string>();
    for (const [sessionId, stream] of [[coordinator.id, rootStream], [h.id, memberStream]] as const) {
      const sent = await sendMessage(sessionId, 'after the controls');
      assert.equal(sent.status, 202, sent.text);
      marks.set(stream, sent.body.input_id);
      await stream.waitFor((e) => e.type === 'yuxi.session.event.accepted' && e.data.receipt.input_id === sent.body.input_id, 20_000);
    }
    for (const stream of [rootStream, memberStream]) {
      const accepted = stream.events.filter((e) => e.type === 'yuxi.session.event.accepted');
      for (const event of accepted) {
        assert.notEqual(event.data.receipt.input_id, null, `only messages are accepted on the stream: ${JSON.stringify(event.data)}`);
        assert.ok(![stop.body.event_id, cont.body.event_id].includes(event.data.receipt.event_id), 'a tree control\'s receipt is never streamed');
      }
      assert.ok(!stream.events.some((e) => e.type.includes('tree')), stream.events.map((e) => e.type).join());
      assert.ok(accepted.some((e) => e.data.receipt.input_id === marks.get(stream)));
    }
    // The member's turn was ended by the stop, the coordinator's too; the messages run.
    await until(() => items(h.id), (list) => list.at(-1)?.content?.[0]?.text === 'Echo: after the controls', 'the member to answer');
    await until(() => items(coordinator.id), (list) => list.at(-1)?.content?.[0]?.text === 'Echo: after the controls', 'the coordinator to answer');
  });

  it('a file one member was given is readable by another member of the tree (one workdir)', async () => {
    const coordinator = await createSessionWith(coordinatorAgent, `${create('hello', 'writer')} ${tool('wait_subagents')}`);
    assert.equal((await endedTurn(coordinator.id, 0)).status, 'completed');
    const writer = await member(coordinator.id, 'writer');
    const content = 'the shared report: 42 widgets';
    const draft = await uploadDraft(content, 'shared-report.txt');
    const given = await postEvent(writer.id, { type: 'agent.session.input.message', input: 'keep this', yuxi: { mode: 'follow_up', attachment_file_ids: [draft.id] } });
    assert.equal(given.status, 202, given.text);
    await until(() => http(`${API}/sessions/${writer.id}/inputs/${given.body.input_id}`), (r) => r.body.status === 'consumed', 'the writer to take the file');

    const read = `${tool('list_files')} ${tool('read_file', { file_id: draft.id })}`;
    assert.equal((await sendMessage(coordinator.id, `${create(read, 'reader')} ${tool('wait_subagents')}`)).status, 202);
    assert.equal((await endedTurn(coordinator.id, 1)).status, 'completed');
    const reader = await member(coordinator.id, 'reader');
    const [listed] = await outputsOf(reader.id, 'function_call');
    assert.match(listed!, /shared-report\.txt/);
    const outputs = (await items(reader.id)).filter((i) => i.type === 'function_call_output').map((i) => i.output as string);
    assert.equal(outputs.length, 2);
    assert.ok(outputs[1]!.includes(content), outputs[1]);
    const waited = JSON.parse((await outputsOf(coordinator.id, 'wait_subagents_call')).at(-1)!);
    assert.ok(waited.subagents.find((m: any) => m.name === 'reader').answer.includes('42 widgets'));
  });
});
