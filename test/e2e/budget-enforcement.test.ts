import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type Caller, createKey, createSessionAs, newProductUser, openStreamAs, postEventAs, sendMessageAs, until } from '../support/identity.js';
import { type SseEvent, SseStream } from '../support/sse.js';

// Budgets enforced before each call: a turn stops at a `budget` waitpoint (pause) or fails with
// budget_exceeded (fail); approving goes on only once the budget has room again (raised, or its
// period rolled over on the settable usage clock). The default agent's echo model makes one model
// call per turn, so `model_calls` counts turns here.

const BUDGETS = `${API}/budgets`;
const CLOCK = `${ADMIN}/usage-clock`;

async function createBudget(caller: Caller, body: object): Promise<any> {
  const res = await call(caller, BUDGETS, { body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function turnOf(caller: Caller, sessionId: string, turnId: string): Promise<any> {
  const res = await call(caller, `${API}/sessions/${sessionId}/turns/${turnId}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** A session whose first turn (its create input) completed, with its stream open. */
async function sessionAfterOneTurn(caller: Caller, streams: SseStream[]): Promise<{ id: string; stream: SseStream }> {
  const session = await createSessionAs(caller, 'first');
  const stream = await openStreamAs(caller, session.id);
  streams.push(stream);
  await stream.waitForType('agent.session.turn.completed');
  return { id: session.id, stream };
}

/** Sends a message; answers its turn's id once the turn is created. */
async function nextTurn(caller: Caller, session: { id: string; stream: SseStream }, text: string): Promise<string> {
  const before = new Set(session.stream.events.filter((e) => e.type === 'agent.session.turn.created').map((e) => e.data.turn_id));
  const sent = await sendMessageAs(caller, session.id, text);
  assert.equal(sent.status, 202, sent.text);
  const created = await session.stream.waitFor((e) => e.type === 'agent.session.turn.created' && !before.has(e.data.turn_id));
  return created.data.turn_id;
}

function approval(turnId: string, waitpointId: string, decision: 'approve' | 'reject'): object {
  return { type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: waitpointId, response: { type: 'approval', decisions: [{ call_id: 'budget', decision }] } };
}

describe('budgets enforced', () => {
  const streams: SseStream[] = [];
  let fake: FakeOpenAi;
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
  });
  after(async () => {
    streams.forEach((stream) => stream.close());
    await fake.close();
    // The clock is the stack's: later files see the real one.
    await call(bootstrap, CLOCK, { method: 'PUT', body: { offset_s: 0 } });
  });

  it('a session budget of one model call pauses the second turn at a budget waitpoint; approving while still over is 409; raised, the approval completes the turn', async () => {
    const { caller, userId } = await newProductUser('budget pause');
    const session = await sessionAfterOneTurn(caller, streams);
    const budget = await createBudget(caller, { scope: { session_id: session.id }, limits: { model_calls: 1 }, on_exceeded: 'pause' });
    // A new message to a session whose lifetime budget is spent is accepted, and its turn waits.
    const turnId = await nextTurn(caller, session, 'second');
    const reached = await session.stream.waitForType('yuxi.session.budget.reached', turnId);
    assert.deepEqual(
      { budget_id: reached.data.budget_id, scope: reached.data.scope, limit: reached.data.limit, limit_value: reached.data.limit_value, spent: reached.data.spent, on_exceeded: reached.data.on_exceeded },
      { budget_id: budget.id, scope: { kind: 'session', id: session.id }, limit: 'model_calls', limit_value: 1, spent: 1, on_exceeded: 'pause' },
    );
    const waiting = await session.stream.waitForType('yuxi.session.turn.waiting', turnId);
    const waitpoint = waiting.data.waitpoint;
    assert.deepEqual({ kind: waitpoint.kind, budget_id: waitpoint.budget_id, limit: waitpoint.limit, spent: waitpoint.spent }, { kind: 'budget', budget_id: budget.id, limit: 'model_calls', spent: 1 });
    const turn = await turnOf(caller, session.id, turnId);
    assert.equal(turn.status, 'requires_action');
    assert.equal(turn.yuxi.waitpoint.id, waitpoint.id);
    assert.equal(turn.yuxi.usage?.model_calls ?? 0, 0, 'the model was not called');
    // Operators see it in their inbox, with what it waits on.
    const inbox = await call(bootstrap, `${ADMIN}/waitpoints?kind=budget&limit=100`);
    assert.equal(inbox.status, 200, inbox.text);
    const listed = inbox.body.data.find((w: any) => w.id === waitpoint.id);
    assert.deepEqual([listed?.kind, listed?.budget_id, listed?.limit, listed?.spent], ['budget', budget.id, 'model_calls', 1]);
    // And the session search's "waiting" filter finds the session: a person must raise and approve.
    const search = await call(bootstrap, `${ADMIN}/sessions?limit=100&waiting=true&owner_id=${userId}`);
    assert.equal(search.status, 200, search.text);
    assert.deepEqual(search.body.data.map((s: any) => s.id), [session.id]);

    const over = await postEventAs(caller, session.id, approval(turnId, waitpoint.id, 'approve'));
    assert.equal(over.status, 409, over.text);
    assert.equal(over.body.error.code, 'budget_exceeded');
    assert.equal(over.body.error.details.budget_id, budget.id);
    assert.equal((await turnOf(caller, session.id, turnId)).status, 'requires_action', 'still waiting, nothing lost');

    const raised = await call(caller, `${BUDGETS}/${budget.id}`, { body: { limits: { model_calls: 2 } } });
    assert.equal(raised.status, 200, raised.text);
    const approved = await postEventAs(caller, session.id, approval(turnId, waitpoint.id, 'approve'));
    assert.equal(approved.status, 202, approved.text);
    await session.stream.waitForType('agent.session.turn.completed', turnId);
    const done = await turnOf(caller, session.id, turnId);
    assert.equal(done.yuxi.usage.model_calls, 1);
    assert.equal((await call(caller, `${BUDGETS}/${budget.id}`)).body.spent.model_calls, 2);
  });

  it('tool calls are checked before they run: a budget of one tool call pauses the turn between the two calls of one model step', async () => {
    const { id: agentId, model } = await putAgent({ tools: [{ type: 'builtin', name: 'calculator' }] });
    fake.script(fakeModel(model), [
      {
        tool_calls: [
          { id: 'c1', name: 'calculator', arguments: JSON.stringify({ expression: '2+3' }) },
          { id: 'c2', name: 'calculator', arguments: JSON.stringify({ expression: '6*7' }) },
        ],
      },
      { text: 'Both done.' },
    ]);
    const session = await createSessionWith(agentId);
    const budget = await http(`${BUDGETS}`, { body: { scope: { session_id: session.id }, limits: { tool_calls: 1 } } });
    assert.equal(budget.status, 201, budget.text);
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    assert.equal((await sendMessage(session.id, 'add and multiply')).status, 202);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    const { waitpoint } = waiting.data;
    assert.deepEqual([waitpoint.kind, waitpoint.limit, waitpoint.spent], ['budget', 'tool_calls', 1]);
    const outputs = (): number => stream.events.filter((e) => e.type === 'agent.session.turn.item.done' && e.data.item.type === 'function_call_output').length;
    assert.equal(outputs(), 1, 'the first call ran, the second waits');
    const raised = await http(`${BUDGETS}/${budget.body.id}`, { body: { limits: { tool_calls: 2 } } });
    assert.equal(raised.status, 200, raised.text);
    const approve = { type: 'yuxi.session.input.resume', turn_id: waiting.data.turn_id, waitpoint_id: waitpoint.id, response: { type: 'approval', decisions: [{ call_id: 'budget', decision: 'approve' }] } };
    assert.equal((await postEvent(session.id, approve)).status, 202);
    // The second call runs; the model call after it finds the budget spent again (every limit bounds every call).
    const again = await stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && e.data.waitpoint.id !== waitpoint.id);
    assert.equal(outputs(), 2);
    assert.deepEqual([again.data.waitpoint.limit, again.data.waitpoint.spent], ['tool_calls', 2]);
  });

  it('rejecting a budget waitpoint fails the turn with budget_exceeded', async () => {
    const { caller } = await newProductUser('budget reject');
    const session = await sessionAfterOneTurn(caller, streams);
    await createBudget(caller, { scope: { session_id: session.id }, limits: { model_calls: 1 } });
    const turnId = await nextTurn(caller, session, 'second');
    const waiting = await session.stream.waitForType('yuxi.session.turn.waiting', turnId);
    const rejected = await postEventAs(caller, session.id, approval(turnId, waiting.data.waitpoint.id, 'reject'));
    assert.equal(rejected.status, 202, rejected.text);
    const failed = await session.stream.waitForType('agent.session.turn.failed', turnId);
    assert.equal(failed.data.turn.error.code, 'budget_exceeded');
    assert.equal((await turnOf(caller, session.id, turnId)).yuxi.usage?.model_calls ?? 0, 0, 'the model was not called');
  });

  it('on_exceeded fail: the turn fails at once with budget_exceeded (not retryable), announced first', async () => {
    const { caller } = await newProductUser('budget fail');
    const session = await sessionAfterOneTurn(caller, streams);
    const budget = await createBudget(caller, { scope: { session_id: session.id }, limits: { model_calls: 1 }, on_exceeded: 'fail' });
    const turnId = await nextTurn(caller, session, 'second');
    const failed = await session.stream.waitForType('agent.session.turn.failed', turnId);
    assert.equal(failed.data.turn.error.code, 'budget_exceeded');
    assert.equal(failed.data.turn.error.retryable, false);
    const reached = session.stream.events.find((e) => e.type === 'yuxi.session.budget.reached' && e.data.turn_id === turnId);
    assert.ok(reached, 'budget.reached was sent');
    assert.equal(reached.data.budget_id, budget.id);
    assert.equal(reached.data.on_exceeded, 'fail');
    assert.ok(reached.data.yuxi.seq < failed.data.yuxi.seq, 'announced before the failure');
    assert.ok(!session.stream.events.some((e) => e.type === 'yuxi.session.turn.waiting' && e.data.turn_id === turnId), 'no waitpoint');
  });

  it('a project budget shared by two sessions running at once is not overshot: the calls stop at its limit', async () => {
    const { caller } = await newProductUser('budget project');
    const project = await call(caller, `${API}/projects`, { body: { name: 'Shared budget' } });
    assert.equal(project.status, 201, project.text);
    const LIMIT = 5;
    const budget = await createBudget(caller, { scope: { project_id: project.body.id }, limits: { model_calls: LIMIT }, period: 'day', on_exceeded: 'pause' });
    const sessions: { id: string; name: string; stream: SseStream }[] = [];
    for (const name of ['a', 'b']) {
      const created = await call(caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', project_id: project.body.id }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const stream = await openStreamAs(caller, created.body.id);
      streams.push(stream);
      sessions.push({ id: created.body.id as string, name, stream });
    }
    // Four messages each, sent together: the two sessions' turns run at the same time.
    await Promise.all(sessions.flatMap((s) => [1, 2, 3, 4].map((i) => sendMessageAs(caller, s.id, `${s.name}${i}`).then((res) => assert.equal(res.status, 202, res.text)))));
    // Each session ends up waiting at the budget (its later messages queued behind that turn).
    const waitingIn = (stream: SseStream): SseEvent | undefined => stream.events.find((e) => e.type === 'yuxi.session.turn.waiting' && e.data.waitpoint.kind === 'budget');
    const both = await until(async () => (sessions.every((s) => waitingIn(s.stream)) ? true : undefined), { attempts: 300, intervalMs: 100 });
    assert.ok(both, 'both sessions wait at the budget');
    const completed = sessions.reduce((n, s) => n + s.stream.events.filter((e) => e.type === 'agent.session.turn.completed').length, 0);
    const spent = (await call(caller, `${BUDGETS}/${budget.id}`)).body.spent;
    // A model call's estimate is one call: the shared limit is never passed, whatever the interleaving.
    assert.equal(spent.model_calls, LIMIT, `spent ${JSON.stringify(spent)}`);
    assert.equal(completed, LIMIT, 'as many turns completed as the budget allowed calls');
  });

  it('an agent budget covers every session of the account with that agent: a new session\'s first turn waits once it is spent', async () => {
    const { caller } = await newProductUser('budget agent');
    await createBudget(caller, { scope: { agent_id: 'default-chatbot' }, limits: { model_calls: 1 } });
    await sessionAfterOneTurn(caller, streams);
    const second = await createSessionAs(caller, 'another session');
    const stream = await openStreamAs(caller, second.id);
    streams.push(stream);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    assert.deepEqual([waiting.data.waitpoint.kind, waiting.data.waitpoint.limit, waiting.data.waitpoint.spent], ['budget', 'model_calls', 1]);
  });

  it("an app key's agent budget binds only its app: another app's end users and the product user's own sessions run on", async () => {
    const { caller: owner, userId } = await newProductUser('budget apps');
    const appKey = async (app: string): Promise<Caller> => ({ name: `${app} key`, token: (await createKey({ user_id: userId, app_id: app })).secret });
    const appA = asEndUser(await appKey(`app-a-${randomUUID().slice(0, 8)}`), 'customer-a');
    const appB = asEndUser(await appKey(`app-b-${randomUUID().slice(0, 8)}`), 'customer-b');
    const inA = await sessionAfterOneTurn(appA, streams);
    const budget = await createBudget(appA, { scope: { agent_id: 'default-chatbot' }, limits: { model_calls: 1 }, on_exceeded: 'fail' });
    assert.equal(budget.spent.model_calls, 1, "app A's one call");
    // Spent, it stops neither app B's end user nor the product user's own session (same agent, same account).
    for (const caller of [appB, owner]) {
      const session = await createSessionAs(caller, 'not app A');
      const stream = await openStreamAs(caller, session.id);
      streams.push(stream);
      const ended = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' || e.type === 'agent.session.turn.failed');
      assert.equal(ended.type, 'agent.session.turn.completed', `${caller.name}: ${JSON.stringify(ended.data)}`);
    }
    assert.equal((await call(appA, `${BUDGETS}/${budget.id}`)).body.spent.model_calls, 1, 'their calls are not counted');
    // App A's own next turn is stopped by it.
    const turnId = await nextTurn(appA, inA, 'second');
    const failed = await inA.stream.waitForType('agent.session.turn.failed', turnId);
    assert.equal(failed.data.turn.error.code, 'budget_exceeded');
  });

  it('day periods roll over: the next day (on the usage clock) the budget has room again', async () => {
    const { caller } = await newProductUser('budget day');
    const session = await sessionAfterOneTurn(caller, streams);
    await createBudget(caller, { scope: { session_id: session.id }, limits: { model_calls: 1 }, period: 'day', on_exceeded: 'pause' });
    const turnId = await nextTurn(caller, session, 'second');
    const waiting = await session.stream.waitForType('yuxi.session.turn.waiting', turnId);
    const over = await postEventAs(caller, session.id, approval(turnId, waiting.data.waitpoint.id, 'approve'));
    assert.equal(over.status, 409, over.text);
    const moved = await call(bootstrap, CLOCK, { method: 'PUT', body: { offset_s: 86_400 } });
    assert.equal(moved.status, 200, moved.text);
    const approved = await postEventAs(caller, session.id, approval(turnId, waiting.data.waitpoint.id, 'approve'));
    assert.equal(approved.status, 202, approved.text);
    await session.stream.waitForType('agent.session.turn.completed', turnId);
  });
});
