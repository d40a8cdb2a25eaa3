import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { putAgent } from '../support/agents.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { until } from '../support/identity.js';

// Session TTL (issue 43): an agent's, a project's and a session's own `ttl`; the `session_ttl`
// retention task archives and deletes idle sessions by the lifecycle clock (moved here with
// PUT /admin/lifecycle-clock; the test stack sweeps every second), postponed while a turn is active.
// The moves stay far below SESSION_PURGE_AFTER_S (7 days): no other test's deleted session is purged.

const CLOCK = '/api/v1/admin/lifecycle-clock';
const ARCHIVE_S = 3600;
const DELETE_S = 7200;

async function setClock(offsetS: number): Promise<void> {
  const res = await http(CLOCK, { method: 'PUT', body: { offset_s: offsetS } });
  assert.equal(res.status, 200, res.text);
}

async function create(body: Record<string, unknown>): Promise<{ status: number; body: any; text: string }> {
  return http(`${API}/sessions`, { body, idempotencyKey: newKey('create') });
}

async function created(body: Record<string, unknown>): Promise<any> {
  const res = await create(body);
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** Polls the session until `test` holds of it (its GET: status and body); bounded. */
async function waitSession(sessionId: string, test: (res: { status: number; body: any }) => boolean, what: string): Promise<{ status: number; body: any }> {
  const seen = await until(async () => {
    const res = await http(`${API}/sessions/${sessionId}`);
    return test(res) ? res : undefined;
  }, { attempts: 150, intervalMs: 200 });
  assert.ok(seen, `${what} (session ${sessionId})`);
  return seen;
}

const listed = async (sessionId: string, query = ''): Promise<boolean> => ((await http(`${API}/sessions?limit=100${query}`)).body.data as any[]).some((s) => s.id === sessionId);
const searched = async (sessionId: string): Promise<boolean> => ((await http(`/api/v1/admin/sessions?q=${sessionId}&limit=10`)).body.data as any[]).some((s) => s.id === sessionId);

describe('session TTL', () => {
  after(async () => {
    await setClock(0);
  });

  it('archives a session idle past archive_after, deletes it past delete_after (404, off lists and search); an active turn postpones; a session\'s own shorter TTL wins', async () => {
    // ask_user: the held session's turn waits at a question (an active turn) until it is cancelled.
    const agent = await putAgent({ model: 'scripted:echo', tools: [{ type: 'builtin', name: 'ask_user' }], ttl: { archive_after_idle_s: ARCHIVE_S, delete_after_idle_s: DELETE_S } });
    assert.deepEqual(agent.agent.yuxi.ttl, { archive_after_idle_s: ARCHIVE_S, delete_after_idle_s: DELETE_S });

    // `held` first, and `idle` only once held's turn waits: every look of the sweep goes through the
    // due sessions earliest check first (create + the shortest TTL here), so by the time it has
    // archived `idle`, due at the same clock move, it has tried `held` — what held still is then is
    // what the postponement left, not a session the sweep has not reached yet.
    const held = await created({ agent_id: agent.id, input: '[[ask:Keep me?]]' });
    await waitSession(held.id, (res) => res.body.status === 'requires_action', 'the held turn waits for an answer');
    const idle = await created({ agent_id: agent.id, input: 'hello, then idle' });
    const own = await created({ agent_id: agent.id, input: 'short-lived', yuxi: { ttl: { delete_after_idle_s: ARCHIVE_S } } });
    assert.deepEqual(own.yuxi.ttl, { delete_after_idle_s: ARCHIVE_S }, 'its own delete wins; the agent\'s archive would come at the delete, so it is dropped');

    const settled = await waitSession(idle.id, (res) => res.body.status === 'completed', 'the first turn completed');
    assert.deepEqual(settled.body.yuxi.ttl, { archive_after_idle_s: ARCHIVE_S, delete_after_idle_s: DELETE_S });
    assert.equal(settled.body.yuxi.expires_at, settled.body.last_active_at + DELETE_S, 'expires_at: when it will be deleted');
    const row = ((await http(`${API}/sessions?limit=100`)).body.data as any[]).find((s) => s.id === idle.id);
    assert.equal(row?.yuxi.expires_at, settled.body.yuxi.expires_at, 'lists show it too');
    await waitSession(own.id, (res) => res.body.status === 'completed', 'the own-TTL session completed');

    try {
      await setClock(ARCHIVE_S + 100);
      await waitSession(idle.id, (res) => res.status === 200 && res.body.yuxi.archived === true, 'archived once idle past archive_after_idle_s');
      await waitSession(own.id, (res) => res.status === 404, 'the session\'s own shorter delete TTL deleted it');
      assert.equal(await listed(own.id, '&archived=true'), false);
      // Archiving `idle` means the sweep has tried `held` (earlier check, same move): its active turn kept it as it was.
      const kept = await http(`${API}/sessions/${held.id}`);
      assert.equal(kept.status, 200);
      assert.equal(kept.body.yuxi.archived, false, 'an active turn postpones the archive');
      assert.equal(await listed(idle.id), false, 'an archived session leaves the default list');
      assert.equal(await listed(idle.id, '&archived=true'), true, 'and is in the archive');

      await setClock(DELETE_S + 100);
      // The same order: held's postponed check (a sweep interval after the first move) comes before idle's delete deadline.
      await waitSession(idle.id, (res) => res.status === 404, 'deleted once idle past delete_after_idle_s');
      assert.equal(await listed(idle.id, '&archived=true'), false, 'gone from the lists');
      assert.equal(await searched(idle.id), false, 'gone from the operators\' search');
      assert.equal((await http(`${API}/sessions/${idle.id}/items`)).status, 404);
      const stillHeld = await http(`${API}/sessions/${held.id}`);
      assert.equal(stillHeld.status, 200, 'the turn still waits: the delete is postponed');
      assert.equal(stillHeld.body.status, 'requires_action');
      assert.equal(await searched(held.id), true);

      // Once the turn settles, the session is idle again from then: due at once on this clock.
      assert.equal((await postEvent(held.id, { type: 'agent.session.input.cancel' })).status, 202);
      await waitSession(held.id, (res) => res.status === 404, 'deleted once its turn settled');
      assert.equal(await searched(held.id), false);
    } finally {
      await setClock(0);
    }
  });

  it('bounds every ttl (422 naming the field); a session may not lengthen its agent\'s or project\'s TTL, on create or update', async () => {
    const bad = await http(`/api/v1/admin/agents/t-ttl-bad-${Date.now()}`, { method: 'PUT', body: { name: 'bad', model: 'scripted:echo', ttl: { archive_after_idle_s: 7200, delete_after_idle_s: 3600 } } });
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.body.error.details.fields[0].field, 'ttl.delete_after_idle_s');

    const agent = await putAgent({ model: 'scripted:echo', ttl: { delete_after_idle_s: DELETE_S } });
    const longer = await create({ agent_id: agent.id, yuxi: { ttl: { delete_after_idle_s: DELETE_S + 1 } } });
    assert.equal(longer.status, 422, longer.text);
    assert.equal(longer.body.error.code, 'validation_failed');
    assert.equal(longer.body.error.details.fields[0].field, 'yuxi.ttl.delete_after_idle_s');
    const tooShort = await create({ agent_id: agent.id, yuxi: { ttl: { archive_after_idle_s: 59 } } });
    assert.equal(tooShort.status, 422, tooShort.text);
    assert.match(JSON.stringify(tooShort.body.error.details), /archive_after_idle_s/);

    const project = await http(`${API}/projects`, { body: { name: 'ttl project', yuxi: { ttl: { archive_after_idle_s: 1800 } } } });
    assert.equal(project.status, 201, project.text);
    assert.deepEqual(project.body.yuxi.ttl, { archive_after_idle_s: 1800 });
    const overProject = await create({ agent_id: agent.id, project_id: project.body.id, yuxi: { ttl: { archive_after_idle_s: 1801 } } });
    assert.equal(overProject.status, 422, overProject.text);
    assert.equal(overProject.body.error.details.fields[0].field, 'yuxi.ttl.archive_after_idle_s');
    const inProject = await created({ agent_id: agent.id, project_id: project.body.id });
    assert.deepEqual(inProject.yuxi.ttl, { archive_after_idle_s: 1800, delete_after_idle_s: DELETE_S }, 'the project\'s and the agent\'s, field by field');
    assert.equal(inProject.yuxi.expires_at, inProject.last_active_at + DELETE_S);

    const update = (ttl: unknown) => http(`${API}/sessions/${inProject.id}`, { body: { yuxi: { ttl } } });
    const lengthened = await update({ delete_after_idle_s: DELETE_S * 2 });
    assert.equal(lengthened.status, 422, lengthened.text);
    assert.equal(lengthened.body.error.details.fields[0].field, 'yuxi.ttl.delete_after_idle_s');
    const shortened = await update({ delete_after_idle_s: 3000 });
    assert.equal(shortened.status, 200, shortened.text);
    assert.deepEqual(shortened.body.yuxi.ttl, { archive_after_idle_s: 1800, delete_after_idle_s: 3000 });
    const removed = await update(null);
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(removed.body.yuxi.ttl, { archive_after_idle_s: 1800, delete_after_idle_s: DELETE_S }, 'its own removed: the project\'s and agent\'s apply again');

    const none = await created({ agent_id: 'default-chatbot' });
    assert.equal(none.yuxi.ttl, null);
    assert.equal(none.yuxi.expires_at, null);
  });
});
