import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeStep } from '../support/fake-openai.js';
import { useFakeOpenAi } from '../support/fake-openai-suite.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { type SseEvent, SseStream } from '../support/sse.js';

// Which model and approval mode each run uses, seen from outside: every run's model is read back
// from the run resource and from the requests the fake OpenAI-compatible server received for that
// model (each test's models are its own); the approval mode shows in whether a tool call stopped
// at an approval waitpoint. The calculator does not declare requires_approval: only `always_ask`
// stops before it. REQUIRES_APPROVAL's calculator does: `default` stops, `always_trust` does not.
const CALCULATOR = { type: 'builtin', name: 'calculator' };
const REQUIRES_APPROVAL = { type: 'builtin', name: 'calculator', requires_approval: true };

function calc(id: string): FakeStep {
  return { tool_calls: [{ id, name: 'calculator', arguments: '{"expression":"6*7"}' }] };
}

/** A reply the fake server holds back until `release()`: the run stays executing meanwhile. */
function held(): { until: Promise<void>; release: () => void } {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

/** Waits on a condition read from outside (bounded: 300 reads, 50 ms apart). */
async function waitUntil(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i += 1) {
    if (await condition()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting until ${what}`);
}

function newModel(): string {
  return `openai:m-${randomUUID()}`;
}

async function create(body: Record<string, unknown>): Promise<any> {
  const res = await http(`${API}/sessions`, { body, idempotencyKey: newKey('create') });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function message(sessionId: string, input: string, yuxi: Record<string, unknown>): Promise<string> {
  const res = await postEvent(sessionId, { type: 'agent.session.input.message', input, yuxi });
  assert.equal(res.status, 202, res.text);
  return res.body.input_id;
}

async function update(sessionId: string, body: object): Promise<any> {
  const res = await http(`${API}/sessions/${sessionId}`, { body });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function turnOf(sessionId: string, inputId: string): Promise<string> {
  let turnId: string | null = null;
  await waitUntil(async () => {
    turnId = (await http(`${API}/sessions/${sessionId}/inputs/${inputId}`)).body.turn_id;
    return turnId !== null;
  }, `input ${inputId} is consumed`);
  return turnId!;
}

/** The models the turn's runs used, in order, as the run resources say. */
async function runModels(sessionId: string, turnId: string): Promise<string[]> {
  const turn = (await http(`${API}/sessions/${sessionId}/turns/${turnId}`)).body;
  const models: string[] = [];
  for (const run of turn.yuxi.runs) {
    const detail = await http(`${API}/sessions/${sessionId}/runs/${run.id}`);
    assert.equal(detail.body.model, run.model);
    models.push(detail.body.model);
  }
  return models;
}

function waitingsOf(stream: SseStream, turnId: string): SseEvent[] {
  return stream.events.filter((e) => e.type === 'yuxi.session.turn.waiting' && e.data.turn_id === turnId);
}

const approvedWaitpoints = new WeakMap<SseStream, Set<string>>();

/** Approves every call of the turn's next approval waitpoint (the oldest this stream has not approved). */
async function approveNext(stream: SseStream, sessionId: string, turnId: string): Promise<void> {
  const approved = approvedWaitpoints.get(stream) ?? new Set<string>();
  approvedWaitpoints.set(stream, approved);
  const waiting = await stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && e.data.turn_id === turnId && !approved.has(e.data.waitpoint.id));
  assert.equal(waiting.data.waitpoint.kind, 'approval');
  approved.add(waiting.data.waitpoint.id);
  const res = await postEvent(sessionId, {
    type: 'yuxi.session.input.resume',
    turn_id: turnId,
    waitpoint_id: waiting.data.waitpoint.id,
    response: { type: 'approval', decisions: waiting.data.waitpoint.tool_calls.map((c: any) => ({ call_id: c.call_id, decision: 'approve' })) },
  });
  assert.equal(res.status, 202, res.text);
}

describe('config resolution: which model and approval mode a run uses', () => {
  const openAi = useFakeOpenAi();
  const open = (sessionId: string): Promise<SseStream> => openAi.open(sessionId);

  it('creates with agent.model and tool_approval_mode when given, else the agent’s, else the deployment default model', async () => {
    const { id: agentId, model: agentModel } = await putAgent({ tools: [CALCULATOR] });
    const chosen = newModel();
    openAi.fake.script(fakeModel(chosen), [calc('c1'), { text: 'chosen done' }]);
    const explicit = await create({ agent_id: agentId, agent: { model: chosen }, tool_approval_mode: 'always_ask', input: 'go' });
    assert.equal(explicit.agent.model, chosen);
    assert.equal(explicit.yuxi.tool_approval_mode, 'always_ask');
    const stream = await open(explicit.id);
    const turnId = (await stream.waitForType('agent.session.turn.created')).data.turn_id;
    await approveNext(stream, explicit.id, turnId);
    await stream.waitForType('agent.session.turn.completed', turnId);
    assert.equal(waitingsOf(stream, turnId).length, 1, 'always_ask stopped before a tool that does not require approval');
    assert.deepEqual(await runModels(explicit.id, turnId), [chosen, chosen], 'the first run and the resumed one');
    assert.equal(openAi.fake.requests(fakeModel(chosen)).length, 2);

    openAi.fake.script(fakeModel(agentModel), [calc('c2'), { text: 'agent done' }]);
    const inherited = await create({ agent_id: agentId, input: 'go' });
    assert.equal(inherited.agent.model, agentModel);
    assert.equal(inherited.yuxi.tool_approval_mode, 'default');
    const second = await open(inherited.id);
    const done = await second.waitForType('agent.session.turn.completed');
    assert.equal(waitingsOf(second, done.data.turn_id).length, 0, 'the agent’s default mode runs the tool without asking');
    assert.deepEqual(await runModels(inherited.id, done.data.turn_id), [agentModel]);
    assert.equal(openAi.fake.requests(fakeModel(agentModel)).length, 2, 'the agent’s model was called, and only for its own session');

    // An agent that names no model: the deployment's DEFAULT_MODEL (scripted:echo in the suite); its own approval mode.
    const bare = `t-${randomUUID().slice(0, 8)}`;
    const put = await http(`/api/v1/admin/agents/${bare}`, { method: 'PUT', body: { name: 'No model', tools: [CALCULATOR], tool_approval_mode: 'always_ask' } });
    assert.equal(put.status, 201, put.text);
    const defaulted = await create({ agent_id: bare, input: '[[tool:calculator {"expression":"6*7"}]]' });
    assert.equal(defaulted.agent.model, 'scripted:echo');
    assert.equal(defaulted.yuxi.tool_approval_mode, 'always_ask');
    const third = await open(defaulted.id);
    const waiting = await third.waitForType('yuxi.session.turn.waiting');
    assert.equal(waiting.data.waitpoint.kind, 'approval');
    assert.deepEqual(await runModels(defaulted.id, waiting.data.turn_id), ['scripted:echo']);
  });

  it('refuses to create a session, empty or not, whose model is not available, and creates nothing', async () => {
    const { id: agentId } = await putAgent({});
    for (const body of [
      { agent_id: agentId, agent: { model: 'nowhere:model' } },
      { agent_id: agentId, agent: { model: 'not-a-reference' } },
      { agent_id: agentId, agent: { model: 'nowhere:model' }, input: 'hello' },
    ]) {
      const res = await http(`${API}/sessions`, { body, idempotencyKey: newKey('create') });
      assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.error.code, 'invalid_model');
    }
    const listed = await http(`${API}/sessions?limit=100&agent_id=${agentId}`);
    assert.deepEqual(listed.body.data, [], 'no session was created');
  });

  it('uses a follow-up’s one-off model and approval mode for that input’s runs only', async () => {
    const { id: agentId, model: sessionModel } = await putAgent({ tools: [CALCULATOR] });
    const override = newModel();
    const hold = held();
    openAi.fake.script(fakeModel(override), [{ ...calc('o1'), until: hold.until }, { text: 'override done' }]);
    openAi.fake.script(fakeModel(sessionModel), [calc('p1'), { text: 'plain done' }]);
    const session = await create({ agent_id: agentId });
    const stream = await open(session.id);

    const first = await message(session.id, 'with overrides', { mode: 'follow_up', model: override, tool_approval_mode: 'always_ask' });
    await waitUntil(() => openAi.fake.requests(fakeModel(override)).length === 1, 'the override model is called');
    const second = await message(session.id, 'without', { mode: 'follow_up' });
    hold.release();

    const firstTurn = await turnOf(session.id, first);
    await approveNext(stream, session.id, firstTurn);
    await stream.waitForType('agent.session.turn.completed', firstTurn);
    const secondTurn = await turnOf(session.id, second);
    await stream.waitForType('agent.session.turn.completed', secondTurn);

    assert.deepEqual(await runModels(session.id, firstTurn), [override, override], 'the overridden input’s run and its resumed run');
    assert.equal(waitingsOf(stream, firstTurn).length, 1, 'always_ask for the overridden input');
    assert.deepEqual(await runModels(session.id, secondTurn), [sessionModel]);
    assert.equal(waitingsOf(stream, secondTurn).length, 0, 'the next input runs with the session’s mode');
    assert.equal(openAi.fake.requests(fakeModel(override)).length, 2);
    assert.equal(openAi.fake.requests(fakeModel(sessionModel)).length, 2);
    const unchanged = (await http(`${API}/sessions/${session.id}`)).body;
    assert.equal(unchanged.agent.model, sessionModel, 'the session itself did not change');
    assert.equal(unchanged.yuxi.tool_approval_mode, 'default');
  });

  it('an idle claim of a steer batch runs with the config its first input froze', async () => {
    const queue = new Queue('session-dispatch', { connection: { url: env.redisUrl } });
    try {
      const { id: agentId, model: frozenModel } = await putAgent({ tools: [CALCULATOR] });
      const later = newModel();
      openAi.fake.script(fakeModel(frozenModel), [calc('b1'), { text: 'batch done' }]);
      const session = await create({ agent_id: agentId });
      const stream = await open(session.id);
      // Workers hold off, so both steers wait in the idle session for one claim.
      await queue.pause();
      const s1 = await message(session.id, 'first steer', { mode: 'steer' });
      await update(session.id, { agent: { model: later }, yuxi: { tool_approval_mode: 'always_ask' } });
      const s2 = await message(session.id, 'second steer', { mode: 'steer' });
      const queued = await http(`${API}/sessions/${session.id}/queue`);
      assert.deepEqual(queued.body.data.map((i: any) => i.id), [s1, s2]);
      await queue.resume();

      const done = await stream.waitForType('agent.session.turn.completed');
      const turn = (await http(`${API}/sessions/${session.id}/turns/${done.data.turn_id}`)).body;
      assert.deepEqual(turn.yuxi.runs[0].input_ids, [s1, s2], 'one batch');
      assert.deepEqual(await runModels(session.id, done.data.turn_id), [frozenModel]);
      assert.equal(waitingsOf(stream, done.data.turn_id).length, 0, 'the first input’s approval mode, not always_ask');
      assert.equal(openAi.fake.requests(fakeModel(frozenModel)).length, 2);
      assert.equal(openAi.fake.requests(fakeModel(later)).length, 0);
    } finally {
      await queue.resume();
      await queue.close();
    }
  });

  it('a steer taken into the running turn keeps the current run’s config', async () => {
    const { id: agentId, model: runModel } = await putAgent({ tools: [CALCULATOR] });
    const later = newModel();
    const hold = held();
    // The steer arrives while the first model call is held; that call asks for a tool, so the run
    // reaches a step boundary, where a waiting steer always joins (looked up in the queue).
    openAi.fake.script(fakeModel(runModel), [{ ...calc('s1'), until: hold.until }, calc('s2'), { text: 'after the steer' }]);
    const session = await create({ agent_id: agentId, input: 'start' });
    const stream = await open(session.id);
    const turnId = (await stream.waitForType('agent.session.turn.created')).data.turn_id;
    await waitUntil(() => openAi.fake.requests(fakeModel(runModel)).length === 1, 'the run calls its model');
    await update(session.id, { agent: { model: later }, yuxi: { tool_approval_mode: 'always_ask' } });
    const steer = await message(session.id, 'change of plan', { mode: 'steer' });
    hold.release();

    await stream.waitForType('agent.session.turn.completed', turnId);
    assert.equal(await turnOf(session.id, steer), turnId, 'the steer joined the running turn');
    const turn = (await http(`${API}/sessions/${session.id}/turns/${turnId}`)).body;
    assert.deepEqual(turn.yuxi.runs.at(-1).input_ids, [steer]);
    const models = await runModels(session.id, turnId);
    assert.ok(models.length >= 2, `the steer ran in a later run: ${models.join(', ')}`);
    assert.deepEqual(new Set(models), new Set([runModel]));
    assert.equal(waitingsOf(stream, turnId).length, 0, 'the run’s approval mode, not the update’s always_ask');
    assert.equal(openAi.fake.requests(fakeModel(later)).length, 0);
    assert.equal(openAi.fake.requests(fakeModel(runModel)).length, 3);
  });

  it('after an update, queued inputs, the current turn and its resumed runs keep the old config; inputs received afterwards get the new', async () => {
    const { id: agentId, model: oldModel } = await putAgent({ tools: [REQUIRES_APPROVAL] });
    const newer = newModel();
    const hold = held();
    openAi.fake.script(fakeModel(oldModel), [
      { ...calc('t1a'), until: hold.until },
      calc('t1b'),
      { text: 'turn one done' },
      calc('t2'),
      { text: 'turn two done' },
    ]);
    openAi.fake.script(fakeModel(newer), [calc('t3'), { text: 'turn three done' }]);
    const session = await create({ agent_id: agentId, input: 'one' });
    const stream = await open(session.id);
    const firstTurn = (await stream.waitForType('agent.session.turn.created')).data.turn_id;
    await waitUntil(() => openAi.fake.requests(fakeModel(oldModel)).length === 1, 'the first turn calls its model');

    const queuedBefore = await message(session.id, 'two', { mode: 'follow_up' });
    const updated = await update(session.id, { agent: { model: newer }, yuxi: { tool_approval_mode: 'always_trust' } });
    assert.equal(updated.agent.model, newer);
    assert.equal(updated.yuxi.tool_approval_mode, 'always_trust');
    const receivedAfter = await message(session.id, 'three', { mode: 'follow_up' });
    hold.release();

    // The current turn: its first run and the run resumed after each approval keep `default`.
    await approveNext(stream, session.id, firstTurn);
    await approveNext(stream, session.id, firstTurn);
    await stream.waitForType('agent.session.turn.completed', firstTurn);
    const secondTurn = await turnOf(session.id, queuedBefore);
    await approveNext(stream, session.id, secondTurn);
    await stream.waitForType('agent.session.turn.completed', secondTurn);
    const thirdTurn = await turnOf(session.id, receivedAfter);
    await stream.waitForType('agent.session.turn.completed', thirdTurn);

    assert.deepEqual(await runModels(session.id, firstTurn), [oldModel, oldModel, oldModel]);
    assert.equal(waitingsOf(stream, firstTurn).length, 2, 'the resumed run still asked');
    assert.deepEqual(await runModels(session.id, secondTurn), [oldModel, oldModel]);
    assert.equal(waitingsOf(stream, secondTurn).length, 1, 'the input queued before the update asked');
    assert.deepEqual(await runModels(session.id, thirdTurn), [newer]);
    assert.equal(waitingsOf(stream, thirdTurn).length, 0, 'the input received after the update trusted the tool');
    assert.equal(openAi.fake.requests(fakeModel(oldModel)).length, 5);
    assert.equal(openAi.fake.requests(fakeModel(newer)).length, 2);
  });
});
