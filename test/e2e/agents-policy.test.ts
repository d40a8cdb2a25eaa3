import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { API, newKey } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, newProductUser, postEventAs, until } from '../support/identity.js';

/** An agent saved by `caller` (default: the bootstrap administrator); fails the test unless 201. */
async function saveAgent(definition: Record<string, unknown>, caller: Caller = bootstrap): Promise<string> {
  const id = `pol-${randomUUID().slice(0, 8)}`;
  const res = await call(caller, `${ADMIN}/agents/${id}`, { method: 'PUT', body: { name: `Policy ${id}`, model: 'scripted:echo', ...definition } });
  assert.equal(res.status, 201, res.text);
  return id;
}

function createSession(caller: Caller, body: Record<string, unknown>) {
  return call(caller, `${API}/sessions`, { body, idempotencyKey: newKey('create') });
}

function followUp(caller: Caller, sessionId: string, yuxi: Record<string, unknown>) {
  return postEventAs(caller, sessionId, { type: 'agent.session.input.message', input: 'hi', yuxi: { mode: 'follow_up', ...yuxi } });
}

function updateSession(caller: Caller, sessionId: string, body: Record<string, unknown>) {
  return call(caller, `${API}/sessions/${sessionId}`, { method: 'POST', body });
}

function assertRefused(res: { status: number; text: string; body: any }, code: string, field: string): void {
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.error.code, code, res.text);
  assert.ok(res.body.error.details.fields.some((f: any) => f.field === field), res.text);
}

describe('agents: who may override the model', () => {
  it('lets a caller who does not manage the agent switch only to its allowed_models, on create, per message and by an update', async () => {
    const agentId = await saveAgent({ allowed_models: ['scripted:allowed'] });
    const shown = await call(bootstrap, `${API}/${agentId}`);
    assert.deepEqual(shown.body.yuxi.allowed_models, ['scripted:allowed']);
    const { caller: user } = await newProductUser('plain user');

    assertRefused(await createSession(user, { agent_id: agentId, agent: { model: 'scripted:other' } }), 'model_not_allowed', 'agent.model');
    const own = await createSession(user, { agent_id: agentId, agent: { model: 'scripted:echo' } });
    assert.equal(own.status, 201, `the agent's own model is no switch: ${own.text}`);
    const allowed = await createSession(user, { agent_id: agentId, agent: { model: 'scripted:allowed' } });
    assert.equal(allowed.status, 201, allowed.text);
    assert.equal(allowed.body.agent.model, 'scripted:allowed');

    const sessionId = own.body.id as string;
    assertRefused(await followUp(user, sessionId, { model: 'scripted:other' }), 'model_not_allowed', 'events[0].yuxi.model');
    assert.equal((await followUp(user, sessionId, { model: 'scripted:allowed' })).status, 202);
    assertRefused(await updateSession(user, sessionId, { agent: { model: 'scripted:other' } }), 'model_not_allowed', 'agent.model');
    const patched = await updateSession(user, sessionId, { agent: { model: 'scripted:allowed' } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal((await updateSession(user, sessionId, { agent: { model: 'scripted:echo' } })).status, 200, 'back to the agent\'s own model');

    // An administrator manages every agent: any model of the deployment.
    const byAdmin = await createSession(bootstrap, { agent_id: agentId, agent: { model: 'scripted:other' } });
    assert.equal(byAdmin.status, 201, byAdmin.text);
    assert.equal((await followUp(bootstrap, byAdmin.body.id, { model: 'scripted:another' })).status, 202);
  });

  it('refuses a model switch on create and per message on an agent without allowed_models to its non-managers, and lets an owner switch on their own agent', async () => {
    const publicAgent = await saveAgent({});
    const { caller: user } = await newProductUser('plain user');
    assertRefused(await createSession(user, { agent_id: publicAgent, agent: { model: 'scripted:other' } }), 'model_not_allowed', 'agent.model');
    const session = await createSession(user, { agent_id: publicAgent });
    assert.equal(session.status, 201, session.text);
    assertRefused(await followUp(user, session.body.id, { model: 'scripted:other' }), 'model_not_allowed', 'events[0].yuxi.model');
    // The default agent is a public one too: the suite's own callers are administrators.
    assertRefused(await createSession(user, { agent_id: 'default-chatbot', agent: { model: 'scripted:other' } }), 'model_not_allowed', 'agent.model');

    const privateAgent = await saveAgent({ visibility: 'private' }, user);
    const mine = await createSession(user, { agent_id: privateAgent, agent: { model: 'scripted:other' } });
    assert.equal(mine.status, 201, `the owner manages their agent: ${mine.text}`);
    assert.equal((await followUp(user, mine.body.id, { model: 'scripted:third' })).status, 202);
  });

  it('refuses allowed_models naming an unknown provider at save', async () => {
    const res = await call(bootstrap, `${ADMIN}/agents/pol-${randomUUID().slice(0, 8)}`, { method: 'PUT', body: { name: 'Bad', allowed_models: ['nope:x'] } });
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.error.code, 'invalid_agent');
    assert.ok(res.body.error.details.fields.some((f: any) => f.field === 'allowed_models[0]'), res.text);
  });
});

describe('agents: a pinned approval mode', () => {
  it('lets callers who do not manage the agent raise the mode but never lower it', async () => {
    const agentId = await saveAgent({ tool_approval_mode: 'default', tool_approval_pinned: true });
    const shown = await call(bootstrap, `${API}/${agentId}`);
    assert.equal(shown.body.yuxi.tool_approval_pinned, true);
    const { caller: user } = await newProductUser('plain user');

    assertRefused(await createSession(user, { agent_id: agentId, tool_approval_mode: 'always_trust' }), 'tool_approval_pinned', 'tool_approval_mode');
    const raised = await createSession(user, { agent_id: agentId, tool_approval_mode: 'always_ask' });
    assert.equal(raised.status, 201, raised.text);
    assert.equal(raised.body.yuxi.tool_approval_mode, 'always_ask');

    const sessionId = raised.body.id as string;
    assertRefused(await followUp(user, sessionId, { tool_approval_mode: 'always_trust' }), 'tool_approval_pinned', 'events[0].yuxi.tool_approval_mode');
    assert.equal((await followUp(user, sessionId, { tool_approval_mode: 'default' })).status, 202, 'the agent\'s own mode is no lowering');
    assert.equal((await followUp(user, sessionId, { tool_approval_mode: 'always_ask' })).status, 202);
    assertRefused(await updateSession(user, sessionId, { yuxi: { tool_approval_mode: 'always_trust' } }), 'tool_approval_pinned', 'yuxi.tool_approval_mode');
    assert.equal((await updateSession(user, sessionId, { yuxi: { tool_approval_mode: 'default' } })).status, 200);

    // Its managers are not bound by the pin.
    const byAdmin = await createSession(bootstrap, { agent_id: agentId, tool_approval_mode: 'always_trust' });
    assert.equal(byAdmin.status, 201, byAdmin.text);
  });

  it('makes approve_session approve the one call for callers bound by the pin; its managers still trust for the session', async () => {
    const agentId = await saveAgent({ tools: [{ type: 'builtin', name: 'calculator', requires_approval: true }], tool_approval_pinned: true });
    const CALC = '[[tool:calculator {"expression":"6*7"}]]';
    const { caller: user } = await newProductUser('plain user');
    /** The session once its turn reached `status` (bounded wait). */
    const reached = async (caller: Caller, sessionId: string, status: string): Promise<any> => {
      const session = await until(async () => {
        const res = await call(caller, `${API}/sessions/${sessionId}`);
        return res.body?.status === status ? res.body : undefined;
      }, { attempts: 150, intervalMs: 100 });
      assert.ok(session, `session ${sessionId} reached ${status}`);
      return session;
    };
    const approveForSession = async (caller: Caller, sessionId: string): Promise<string> => {
      const waiting = await reached(caller, sessionId, 'requires_action');
      const turn = waiting.yuxi.current_turn;
      const decisions = turn.waitpoint.tool_calls.map((c: any) => ({ call_id: c.call_id, decision: 'approve_session' }));
      const res = await postEventAs(caller, sessionId, { type: 'yuxi.session.input.resume', turn_id: turn.id, waitpoint_id: turn.waitpoint.id, response: { type: 'approval', decisions } });
      assert.equal(res.status, 202, res.text);
      await reached(caller, sessionId, 'completed');
      return turn.id as string;
    };
    for (const [caller, asksAgain] of [[user, true], [bootstrap, false]] as const) {
      const created = await createSession(caller, { agent_id: agentId, input: CALC });
      assert.equal(created.status, 201, created.text);
      const firstTurn = await approveForSession(caller, created.body.id);
      // The next turn calls the tool again: asked again, or trusted for the session.
      const again = await postEventAs(caller, created.body.id, { type: 'agent.session.input.message', input: CALC, yuxi: { mode: 'follow_up' } });
      assert.equal(again.status, 202, again.text);
      const settled = await until(async () => {
        const res = await call(caller, `${API}/sessions/${created.body.id}`);
        const done = res.body?.status === 'requires_action' || res.body?.status === 'completed';
        return done && res.body.yuxi.current_turn?.id !== firstTurn ? res.body : undefined;
      }, { attempts: 150, intervalMs: 100 });
      assert.equal(settled?.status, asksAgain ? 'requires_action' : 'completed', `${caller === user ? 'a caller bound by the pin' : 'an administrator'}: asked again = ${asksAgain}`);
    }
  });

  it('changes nothing where the agent is not pinned', async () => {
    const agentId = await saveAgent({ tool_approval_mode: 'always_ask' });
    const { caller: user } = await newProductUser('plain user');
    const lowered = await createSession(user, { agent_id: agentId, tool_approval_mode: 'always_trust' });
    assert.equal(lowered.status, 201, lowered.text);
    assert.equal((await followUp(user, lowered.body.id, { tool_approval_mode: 'always_trust' })).status, 202);
    assert.equal((await updateSession(user, lowered.body.id, { yuxi: { tool_approval_mode: 'default' } })).status, 200);
  });
});

describe('agents: instructions are their owner\'s', () => {
  it('shows a non-administrator the instructions of their own agents only, on the agent list, get and versions routes', async () => {
    const secret = `public prompt ${randomUUID()}`;
    const publicAgent = await saveAgent({ instructions: secret });
    const { caller: user } = await newProductUser('plain user');
    const ownAgent = await saveAgent({ instructions: 'my own prompt', visibility: 'private' }, user);

    const adminList: any = await call(user, `${ADMIN}/agents`);
    assert.equal(adminList.status, 200, adminList.text);
    const listedPublic = adminList.body.data.find((a: any) => a.id === publicAgent);
    assert.ok(listedPublic, 'the public agent is listed');
    assert.equal(listedPublic.yuxi.instructions, undefined, 'another owner\'s instructions stay hidden');
    assert.equal(adminList.body.data.find((a: any) => a.id === ownAgent)?.yuxi.instructions, 'my own prompt');
    assert.ok(!adminList.text.includes(secret));
    for (const path of [`${API}`, `${API}/${publicAgent}`, `${ADMIN}/agents/${publicAgent}/versions`]) {
      const res = await call(user, path);
      assert.ok(!res.text.includes(secret), `${path} (${res.status}) shows no other owner's instructions`);
    }
    // Administrators still read every agent's.
    const byAdmin: any = await call(bootstrap, `${ADMIN}/agents`);
    assert.equal(byAdmin.body.data.find((a: any) => a.id === publicAgent)?.yuxi.instructions, secret);
  });
});
