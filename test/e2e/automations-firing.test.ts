import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, http, newKey } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, createKey, createSessionAs, newProductUser, until } from '../support/identity.js';
import { query } from '../support/db.js';
import { scrape, total } from '../support/metrics.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

// Firing through the public API: run now (POST /automations/{id}/invocations) takes the one path of
// scheduled times, so what it does here (the input accepted in the invocation's transaction, the
// overlap policies, a gone target) is what every scheduled time does. The schedules are yearly:
// no timer fires during these tests.

const AUTOMATIONS = `${API}/automations`;
const YEARLY = { type: 'periodic', expression: '0 0 1 1 *', timezone: 'UTC' };
// A turn of ten words, 250 ms each: slow enough that the next run now finds it active, whatever the load.
const SLOW = 'one two three four five six seven eight nine ten [[delay:250]]';
const TERMINAL = ['completed', 'failed', 'cancelled'];

async function createAutomation(caller: Caller, target: object, yuxi: object = {}): Promise<any> {
  const res = await call(caller, AUTOMATIONS, { body: { name: 'firing test', ...YEARLY, target, yuxi }, idempotencyKey: newKey('automation') });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function runNow(caller: Caller, automationId: string, key = newKey('run-now')): Promise<any> {
  const res = await call(caller, `${AUTOMATIONS}/${automationId}/invocations`, { method: 'POST', idempotencyKey: key });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function invocation(caller: Caller, automationId: string, id: string): Promise<any> {
  const res = await call(caller, `${AUTOMATIONS}/${automationId}/invocations/${id}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** The invocation once its input became a turn, and that turn once it is terminal (bounded waits). */
async function endedTurn(caller: Caller, automationId: string, invocationId: string): Promise<any> {
  const linked = await until(async () => {
    const v = await invocation(caller, automationId, invocationId);
    return v.yuxi.turn_id ? v : undefined;
  }, { attempts: 200, intervalMs: 100 });
  assert.ok(linked, 'the invocation is linked to the turn its input became');
  const turn = await until(async () => {
    const res = await call(caller, `${API}/sessions/${linked.session_id}/turns/${linked.yuxi.turn_id}`);
    return TERMINAL.includes(res.body.status) ? res.body : undefined;
  }, { attempts: 300, intervalMs: 100 });
  assert.ok(turn, 'the turn ends');
  return turn;
}

async function assistantTexts(caller: Caller, sessionId: string): Promise<string[]> {
  const items = await call(caller, `${API}/sessions/${sessionId}/items?order=asc&limit=100`);
  return items.body.data.filter((i: any) => i.role === 'assistant').map((i: any) => i.content[0].text);
}

describe('automations: firing (run now)', () => {
  let owner: Caller;
  before(async () => {
    owner = (await newProductUser('automation firing owner')).caller;
  });

  it('a new_session target creates a session whose turn completes, the invocation linked to it; the same key replays it, one session', async () => {
    const caller = (await newProductUser('run now owner')).caller;
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'nightly report' }] }];
    const automation = await createAutomation(caller, { type: 'new_session', agent_id: 'default-chatbot', environment: { type: 'none' }, input });
    const key = newKey('run-now');
    const fired = await runNow(caller, automation.id, key);
    assert.equal(fired.object, 'agent.automation.invocation');
    assert.equal(fired.automation_id, automation.id);
    assert.equal(fired.status, 'completed');
    assert.equal(fired.scheduled_at, null);
    assert.deepEqual(fired.source, { type: 'manual' });
    assert.equal(fired.yuxi.reason, 'manual');
    assert.ok(fired.session_id && fired.yuxi.input_id, 'the invocation names the session and the input it accepted');
    assert.equal(typeof fired.yuxi.fired_at, 'number');

    const turn = await endedTurn(caller, automation.id, fired.id);
    assert.equal(turn.status, 'completed');
    assert.deepEqual(await assistantTexts(caller, fired.session_id), ['Echo: nightly report']);
    const session = await call(caller, `${API}/sessions/${fired.session_id}`);
    assert.equal(session.status, 200, 'the session is the automation owner\'s');

    const again = await runNow(caller, automation.id, key);
    assert.deepEqual({ ...again, yuxi: { ...again.yuxi, turn_id: null } }, { ...fired, yuxi: { ...fired.yuxi, turn_id: null } }, 'the same key answers the same invocation');
    const list = await call(caller, `${AUTOMATIONS}/${automation.id}/invocations`);
    assert.deepEqual(list.body.data.map((v: any) => v.id), [fired.id], 'one invocation');
    const sessions = await call(caller, `${API}/sessions?limit=100`);
    assert.deepEqual(sessions.body.data.map((s: any) => s.id), [fired.session_id], 'one session');
  });

  it('existing_session, overlap skip: a run while the previous invocation\'s turn is active is skipped (pending_delivery)', async () => {
    const session = await createSessionAs(owner, SLOW);
    const automation = await createAutomation(owner, { type: 'existing_session', session_id: session.id, instructions: 'status?' }, { overlap: 'skip' });
    const first = await runNow(owner, automation.id);
    assert.equal(first.status, 'completed', 'nothing of the automation is active yet: it fires (queued behind the slow turn)');
    assert.equal(first.session_id, session.id);
    const second = await runNow(owner, automation.id);
    assert.equal(second.status, 'skipped');
    assert.equal(second.skip_reason, 'pending_delivery');
    assert.equal(second.yuxi.reason, 'overlap_skipped');
    assert.equal(second.yuxi.input_id, null, 'no input was accepted');
    assert.equal((await endedTurn(owner, automation.id, first.id)).status, 'completed');
    const third = await runNow(owner, automation.id);
    assert.equal(third.status, 'completed', 'the previous turn ended: the next run fires');
    assert.equal((await endedTurn(owner, automation.id, third.id)).status, 'completed');
    assert.deepEqual(await assistantTexts(owner, session.id), ['Echo: one two three four five six seven eight nine ten', 'Echo: status?', 'Echo: status?']);
  });

  it('existing_session, overlap queue: the run is accepted behind the active turn (the session\'s queue shows it)', async () => {
    const session = await createSessionAs(owner, SLOW);
    const automation = await createAutomation(owner, { type: 'existing_session', session_id: session.id, instructions: 'queued check' }, { overlap: 'queue' });
    const first = await runNow(owner, automation.id);
    const second = await runNow(owner, automation.id);
    assert.equal(second.status, 'completed');
    assert.equal(second.yuxi.reason, 'overlap_queued');
    const queue = await call(owner, `${API}/sessions/${session.id}/queue`);
    assert.equal(queue.status, 200, queue.text);
    const pending = queue.body.data.filter((i: any) => i.status === 'pending').map((i: any) => i.id);
    assert.ok(pending.includes(second.yuxi.input_id), `the queued run's input waits in the queue: ${queue.text}`);
    assert.equal((await endedTurn(owner, automation.id, first.id)).status, 'completed');
    assert.equal((await endedTurn(owner, automation.id, second.id)).status, 'completed');
    assert.deepEqual(await assistantTexts(owner, session.id), ['Echo: one two three four five six seven eight nine ten', 'Echo: queued check', 'Echo: queued check']);
  });

  it('existing_session, overlap cancel_previous: the previous invocation\'s running turn is cancelled, then the run is accepted', async () => {
    const session = await createSessionAs(owner);
    const automation = await createAutomation(owner, { type: 'existing_session', session_id: session.id, instructions: SLOW }, { overlap: 'cancel_previous' });
    const first = await runNow(owner, automation.id);
    const running = await until(async () => {
      const v = await invocation(owner, automation.id, first.id);
      return v.yuxi.turn_id ? v : undefined;
    }, { attempts: 200, intervalMs: 100 });
    assert.ok(running, 'the first run became a turn');
    const second = await runNow(owner, automation.id);
    assert.equal(second.status, 'completed');
    assert.equal(second.yuxi.reason, 'overlap_cancelled_previous');
    assert.equal((await endedTurn(owner, automation.id, first.id)).status, 'cancelled', 'the previous turn was cancelled');
    assert.equal((await endedTurn(owner, automation.id, second.id)).status, 'completed', 'the new run ran after it');
  });

  it('cancel_previous: a retried run now (the same key) replays the first run and never cancels its turn', async () => {
    const session = await createSessionAs(owner);
    const automation = await createAutomation(owner, { type: 'existing_session', session_id: session.id, instructions: SLOW }, { overlap: 'cancel_previous' });
    const key = newKey('run-now');
    const first = await runNow(owner, automation.id, key);
    const running = await until(async () => {
      const v = await invocation(owner, automation.id, first.id);
      return v.yuxi.turn_id ? v : undefined;
    }, { attempts: 200, intervalMs: 100 });
    assert.ok(running, 'the first run became a turn');
    const retried = await runNow(owner, automation.id, key);
    assert.equal(retried.id, first.id, 'the same invocation');
    assert.equal((await endedTurn(owner, automation.id, first.id)).status, 'completed', 'its turn was not cancelled by the retry');
    const list = await call(owner, `${AUTOMATIONS}/${automation.id}/invocations`);
    assert.deepEqual(list.body.data.map((v: any) => v.id), [first.id], 'one invocation');
  });

  it('a retried run now replays its invocation even after the automation was deleted', async () => {
    const session = await createSessionAs(owner);
    const automation = await createAutomation(owner, { type: 'existing_session', session_id: session.id, instructions: 'once' });
    const key = newKey('run-now');
    const first = await runNow(owner, automation.id, key);
    assert.equal((await call(owner, `${AUTOMATIONS}/${automation.id}`, { method: 'DELETE' })).status, 200);
    const retried = await runNow(owner, automation.id, key);
    assert.equal(retried.id, first.id);
  });
});

describe('automations: the creator as they are now', () => {
  it('a revoked creating key fails the next run (another key of the same user runs it) and pauses the automation (owner_unavailable)', async () => {
    const { userId, key, caller } = await newProductUser('revoked key owner');
    const other: Caller = { name: 'second key', token: (await createKey({ user_id: userId, access: 'full' })).secret };
    const session = await createSessionAs(caller);
    const automation = await createAutomation(caller, { type: 'existing_session', session_id: session.id, instructions: 'hello?' });
    const revoked = await call(bootstrap, `${ADMIN}/api-keys/${key.id}`, { method: 'DELETE' });
    assert.equal(revoked.status, 200, revoked.text);

    const fired = await runNow(other, automation.id);
    assert.equal(fired.status, 'failed');
    assert.equal(fired.error.code, 'unauthorized');
    assert.equal(fired.yuxi.reason, 'target_unavailable');
    assert.equal(fired.yuxi.input_id, null, 'nothing was accepted as the revoked key');
    const paused = await call(other, `${AUTOMATIONS}/${automation.id}`);
    assert.deepEqual([paused.body.status, paused.body.pause_reason], ['paused', 'owner_unavailable']);
  });
});

describe('automations: an input refused', () => {
  it('an archived target session refuses the message: the invocation fails (rejected), the automation stays active', async () => {
    const caller = (await newProductUser('refused input owner')).caller;
    const session = await createSessionAs(caller);
    const automation = await createAutomation(caller, { type: 'existing_session', session_id: session.id, instructions: 'hello?' });
    assert.equal((await call(caller, `${API}/sessions/${session.id}/archive`, { method: 'POST' })).status, 200);
    const fired = await runNow(caller, automation.id);
    assert.equal(fired.status, 'failed');
    assert.equal(fired.error.code, 'state_conflict');
    assert.equal(fired.yuxi.reason, 'rejected');
    assert.equal(fired.yuxi.input_id, null);
    const after = await call(caller, `${AUTOMATIONS}/${automation.id}`);
    assert.deepEqual([after.body.status, after.body.pause_reason, after.body.yuxi.next_run_at], ['active', null, automation.yuxi.next_run_at]);
  });
});

describe('automations: a missing environment file', () => {
  it('fails a new_session run as a refusal of the input (rejected): the automation stays active, not paused as agent_deleted', async () => {
    const { caller } = await newProductUser('environment file owner');
    const draft = await uploadDraft('a,b\n1,2\n', 'input.csv', { token: caller.token });
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'daily' }] }];
    const environment = { type: 'openai_hosted', files: [{ type: 'file_id', file_id: draft.id, path: 'data/input.csv' }] };
    const automation = await createAutomation(caller, { type: 'new_session', agent_id: 'default-chatbot', environment, input });
    const deleted = await call(caller, `${API}/files/${draft.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);

    const fired = await runNow(caller, automation.id);
    assert.equal(fired.status, 'failed');
    assert.equal(fired.error.code, 'not_found');
    assert.equal(fired.yuxi.reason, 'rejected');
    const after = await call(caller, `${AUTOMATIONS}/${automation.id}`);
    assert.deepEqual([after.body.status, after.body.pause_reason], ['active', null]);
  });
});

describe('automations: a gone target', () => {
  let receiver: WebhookReceiver;
  before(async () => {
    receiver = await WebhookReceiver.start();
  });
  after(() => receiver.close());

  it('a deleted target session fails the invocation, pauses the automation (target_session_deleted) and announces both by webhook', async () => {
    const caller = (await newProductUser('gone target owner')).caller;
    const hook = await call(caller, `${API}/webhooks`, { body: { url: `${receiver.url}/automation-gone`, event_types: ['agent.automation.invocation.failed', 'yuxi.automation.paused'] } });
    assert.equal(hook.status, 201, hook.text);
    const session = await createSessionAs(caller);
    const automation = await createAutomation(caller, { type: 'existing_session', session_id: session.id, instructions: 'hello?' });
    const deleted = await call(caller, `${API}/sessions/${session.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);

    const fired = await runNow(caller, automation.id);
    assert.equal(fired.status, 'failed');
    assert.equal(fired.error.code, 'not_found');
    assert.equal(fired.yuxi.reason, 'target_unavailable');
    assert.equal(fired.yuxi.input_id, null);
    const paused = await call(caller, `${AUTOMATIONS}/${automation.id}`);
    assert.equal(paused.body.status, 'paused');
    assert.equal(paused.body.pause_reason, 'target_session_deleted');
    assert.equal(paused.body.yuxi.next_run_at, null);

    await receiver.waitFor('both automation webhooks', () => receiver.at('/automation-gone').length >= 2);
    const hooks = receiver.at('/automation-gone').map((h) => h.json);
    const data = { automation_id: automation.id, invocation_id: fired.id, error_code: 'not_found', pause_reason: 'target_session_deleted' };
    assert.deepEqual(hooks.map((h) => h.type).sort(), ['agent.automation.invocation.failed', 'yuxi.automation.paused']);
    for (const h of hooks) assert.deepEqual(h.data, data, h.type);
    assert.notEqual(hooks[0].id, hooks[1].id, 'each event its own id');
  });

  it('a deleted agent fails a new_session run and pauses the automation (agent_deleted); no session is created', async () => {
    const caller = (await newProductUser('gone agent owner')).caller;
    const { id: agentId } = await putAgent({ model: 'scripted:echo' });
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'daily' }] }];
    const automation = await createAutomation(caller, { type: 'new_session', agent_id: agentId, environment: { type: 'none' }, input });
    assert.equal((await http(`/api/v1/admin/agents/${agentId}`, { method: 'DELETE' })).status, 200);

    const fired = await runNow(caller, automation.id);
    assert.equal(fired.status, 'failed');
    assert.equal(fired.error.code, 'not_found');
    assert.equal(fired.yuxi.reason, 'target_unavailable');
    assert.equal(fired.session_id, null, 'no session was created');
    const paused = await call(caller, `${AUTOMATIONS}/${automation.id}`);
    assert.deepEqual([paused.body.status, paused.body.pause_reason], ['paused', 'agent_deleted']);
    const sessions = await call(caller, `${API}/sessions?limit=10`);
    assert.deepEqual(sessions.body.data, [], 'nothing of the refused create was written');
  });
});

describe('automations: an owner suspended', () => {
  it('a scheduled time of a suspended owner fails and pauses the automation (owner_unavailable)', { timeout: 60_000 }, async () => {
    const { userId, caller } = await newProductUser('suspended automation owner');
    const session = await createSessionAs(caller);
    const res = await call(caller, AUTOMATIONS, {
      body: { name: 'every second', type: 'periodic', expression: '* * * * * *', timezone: 'UTC', target: { type: 'existing_session', session_id: session.id, instructions: 'tick' } },
      idempotencyKey: newKey('automation'),
    });
    assert.equal(res.status, 201, res.text);
    const suspended = await call(bootstrap, `${ADMIN}/users/${userId}/suspend`, { method: 'POST' });
    assert.equal(suspended.status, 200, suspended.text);
    let paused: { status: string; pause_reason: string } | undefined;
    try {
      // The owner's credentials are refused while suspended: the database says when the fire paused it.
      paused = await until(async () => {
        const [row] = await query<{ status: string; pause_reason: string }>(`SELECT status, pause_reason FROM automations WHERE id = $1`, [res.body.id]);
        return row?.status === 'paused' ? row : undefined;
      }, { attempts: 200, intervalMs: 100 });
    } finally {
      assert.equal((await call(bootstrap, `${ADMIN}/users/${userId}/reactivate`, { method: 'POST' })).status, 200);
    }
    assert.deepEqual(paused, { status: 'paused', pause_reason: 'owner_unavailable' });
    const list = await call(caller, `${AUTOMATIONS}/${res.body.id}/invocations`);
    const failed = list.body.data.filter((v: any) => v.status === 'failed');
    assert.equal(failed.length, 1, `one failed time, then no more: ${list.text}`);
    assert.equal(failed[0].error.code, 'user_suspended');
    assert.equal(failed[0].yuxi.reason, 'target_unavailable');
    assert.equal(failed[0].source.type, 'automation');
    assert.ok(list.body.data.every((v: any) => v.status !== 'failed' || v.yuxi.input_id === null), 'the failed time accepted nothing');
  });
});

// The metrics of firing (the metrics suite leaves them to this file): run now counts on the api, a
// scheduled fire on the worker, with its lag.
describe('automations: firing metrics and the scheduled snapshot', () => {
  it('run now counts on the api; a scheduled time fired by the worker counts there with its lag, its invocation holding the automation as it was', { timeout: 60_000 }, async () => {
    const caller = (await newProductUser('firing metrics owner')).caller;
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'tick' }] }];
    const target = { type: 'new_session', agent_id: 'default-chatbot', environment: { type: 'none' }, input };
    const manual = { source: 'manual', status: 'completed', reason: 'manual' };
    const apiBefore = total(await scrape(env.apiUrl), 'yuxi_automation_invocations_total', manual);
    const yearly = await createAutomation(caller, target);
    await runNow(caller, yearly.id);
    assert.equal(total(await scrape(env.apiUrl), 'yuxi_automation_invocations_total', manual), apiBefore + 1, 'one run now, counted once after commit');

    const workerBefore = await scrape(env.workerHealthUrl);
    const res = await call(caller, AUTOMATIONS, { body: { name: 'every second', type: 'periodic', expression: '* * * * * *', timezone: 'UTC', target }, idempotencyKey: newKey('automation') });
    assert.equal(res.status, 201, res.text);
    const every = res.body;
    try {
      const fired = await until(async () => {
        const list = await call(caller, `${AUTOMATIONS}/${every.id}/invocations?order=asc`);
        return list.body.data.find((v: any) => v.source.type === 'automation' && v.status === 'completed');
      }, { attempts: 150, intervalMs: 100 });
      assert.ok(fired, 'a scheduled time fired');
      assert.equal(typeof fired.scheduled_at, 'number');
      const snapshot = fired.source.automation;
      assert.equal(snapshot.id, every.id);
      assert.equal(snapshot.object, 'agent.automation');
      assert.equal(snapshot.expression, '* * * * * *');
      const withoutInput = { ...every.target };
      delete withoutInput.input;
      assert.deepEqual(snapshot.target, withoutInput, 'the target without its input (kept on every time, it would copy the input each time)');
      assert.equal(snapshot.yuxi.next_run_at, fired.scheduled_at, 'as it was when the time fired: that time was its next');
    } finally {
      assert.equal((await call(caller, `${AUTOMATIONS}/${every.id}/pause`, { method: 'POST' })).status, 200);
    }
    const moved = await until(async () => {
      const now = await scrape(env.workerHealthUrl);
      const counted = total(now, 'yuxi_automation_invocations_total', { source: 'automation', status: 'completed' }) > total(workerBefore, 'yuxi_automation_invocations_total', { source: 'automation', status: 'completed' });
      const lag = total(now, 'yuxi_automation_fire_lag_seconds_count') > total(workerBefore, 'yuxi_automation_fire_lag_seconds_count');
      return counted && lag ? true : undefined;
    });
    assert.ok(moved, 'the worker counted the fire and observed its lag');
  });
});
