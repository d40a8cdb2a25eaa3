import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { AgentsApiError, AgentsClient } from '#libs/sdk';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { call, createKey, createSessionAs } from '../support/identity.js';

// The official `openai` SDK (the pinned version) drives automations as its README says: baseURL =
// origin + /api/v1, the Idempotency-Key of a create as a per-request header.

const userId = randomUUID();

async function clientOf(): Promise<{ client: OpenAI; token: string }> {
  const key = await createKey({ user_id: userId, access: 'full' });
  return { client: new OpenAI({ apiKey: key.secret, baseURL: `${env.apiUrl}/api/v1`, maxRetries: 0 }), token: key.secret };
}

function keyed(key: string): { headers: Record<string, string> } {
  return { headers: { 'Idempotency-Key': key } };
}

describe('automations through the official openai SDK', () => {
  it('creates, retrieves, lists, updates, pauses, resumes, lists invocations of and deletes automations', async () => {
    const { client, token } = await clientOf();
    const automations = client.beta.agents.automations;
    const params = {
      name: 'sdk digest',
      type: 'periodic' as const,
      expression: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      target: { type: 'new_session' as const, agent_id: 'default-chatbot', environment: { type: 'none' as const }, input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: 'hello' }] }] },
    };
    await assert.rejects(automations.create(params), (error: unknown) => error instanceof OpenAI.APIError && error.status === 422);
    const key = `sdk-automation-${randomUUID()}`;
    const created = await automations.create(params, keyed(key));
    assert.equal(created.object, 'agent.automation');
    assert.equal(created.type, 'periodic');
    assert.equal(created.status, 'active');
    assert.equal((created as { expression?: string }).expression, '0 9 * * 1-5');
    assert.equal(created.target.type, 'new_session');
    assert.equal((await automations.create(params, keyed(key))).id, created.id, 'the same key answers the same automation');

    assert.deepEqual(await automations.retrieve(created.id), created);

    const session = await createSessionAs({ name: 'sdk user', token });
    const runAt = Math.floor(Date.now() / 1000) + 3600;
    const once = await automations.create({ name: 'sdk once', type: 'once', run_at: runAt, target: { type: 'existing_session', session_id: session.id, instructions: 'follow up' } }, keyed(`sdk-once-${randomUUID()}`));
    assert.equal(once.type, 'once');
    assert.equal((once as { run_at?: number }).run_at, runAt);

    const seen: string[] = [];
    for await (const automation of automations.list({ limit: 1 })) seen.push(automation.id);
    assert.deepEqual(seen, [once.id, created.id], 'every page, newest first');
    const bySession = await automations.list({ session_id: session.id });
    assert.deepEqual(bySession.data.map((a) => a.id), [once.id]);

    const updated = await automations.update(created.id, { name: 'sdk digest (renamed)', expression: '30 8 * * 1-5' });
    assert.equal(updated.name, 'sdk digest (renamed)');
    assert.equal((updated as { expression?: string }).expression, '30 8 * * 1-5');

    const paused = await automations.pause(created.id);
    assert.equal(paused.status, 'paused');
    const resumed = await automations.resume(created.id);
    assert.equal(resumed.status, 'active');
    const next = (resumed as unknown as { yuxi: { next_run_at: number } }).yuxi.next_run_at;
    assert.ok(next > Date.now() / 1000, 'resumed with a next time after now');

    assert.deepEqual((await automations.invocations.list(created.id)).data, [], 'nothing fired yet');
    const runKey = `sdk-run-${randomUUID()}`;
    const invocation = await automations.invocations.create(created.id, keyed(runKey));
    assert.equal(invocation.object, 'agent.automation.invocation');
    assert.equal(invocation.source.type, 'manual');
    assert.equal((await automations.invocations.create(created.id, keyed(runKey))).id, invocation.id, 'the same key replays the run');
    const invocations = await automations.invocations.list(created.id);
    assert.deepEqual(invocations.data.map((v) => v.id), [invocation.id]);
    assert.equal((await automations.invocations.retrieve(invocation.id, { automation_id: created.id })).id, invocation.id);
    await assert.rejects(automations.invocations.retrieve(randomUUID(), { automation_id: created.id }), (error: unknown) => error instanceof OpenAI.APIError && error.status === 404);

    const deleted = await automations.delete(once.id);
    assert.deepEqual(deleted, { id: once.id, object: 'agent.automation.deleted', deleted: true });
    await assert.rejects(automations.retrieve(once.id), (error: unknown) => error instanceof OpenAI.APIError && error.status === 404);
    assert.equal((await call({ name: 'sdk user', token }, `${API}/sessions/${session.id}`)).status, 200, 'the target session stays');
  });

  it('our SDK drives them too: create with a kept key, preview, run now once per key, invocations, pause, resume, delete', async () => {
    const key = await createKey({ user_id: randomUUID(), access: 'full' });
    const client = new AgentsClient({ baseUrl: env.apiUrl, apiKey: key.secret });
    const preview = await client.automations.preview({ expression: '0 9 * * 1-5', timezone: 'Europe/Berlin', count: 3 });
    assert.equal(preview.next_run_times.length, 3);
    const params = { name: 'our sdk', type: 'periodic' as const, expression: '0 9 * * 1-5', timezone: 'Europe/Berlin', target: { type: 'new_session' as const, agent_id: 'default-chatbot', input: [{ role: 'user' as const, content: 'hello' }] } };
    const createKeyValue = `our-sdk-${randomUUID()}`;
    const created = await client.automations.create(params, { idempotencyKey: createKeyValue });
    assert.equal((await client.automations.create(params, { idempotencyKey: createKeyValue })).id, created.id);
    assert.equal(created.yuxi.next_run_at, preview.next_run_times[0], 'the first fire is the preview\'s first time');
    const runKey = `our-run-${randomUUID()}`;
    const run = await client.automations.runNow(created.id, { idempotencyKey: runKey });
    assert.equal((await client.automations.runNow(created.id, { idempotencyKey: runKey })).id, run.id);
    assert.deepEqual((await client.automations.invocations(created.id)).data.map((v) => v.id), [run.id]);
    assert.equal((await client.automations.invocation(created.id, run.id)).source.type, 'manual');
    assert.equal((await client.automations.pause(created.id)).status, 'paused');
    assert.equal((await client.automations.resume(created.id)).status, 'active');
    const listed: string[] = [];
    for await (const automation of client.automations.listAll()) listed.push(automation.id);
    assert.deepEqual(listed, [created.id]);
    assert.equal((await client.automations.delete(created.id)).deleted, true);
    await assert.rejects(client.automations.get(created.id), (error: unknown) => error instanceof AgentsApiError && error.status === 404 && error.code === 'not_found');
  });
});
