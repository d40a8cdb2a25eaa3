import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type Caller, createKey, createSessionAs, signToken } from '../support/identity.js';
import { RawSseClient } from '../support/slow-reader.js';

const REPLICAS = [env.apiUrl, env.apiUrl2];

/** The audit entries of one target, newest first (bounded walk). */
async function auditOf(targetId: string): Promise<any[]> {
  const found: any[] = [];
  let after: string | null = null;
  for (let page = 0; page < 50; page += 1) {
    const res: any = await call(bootstrap, `${ADMIN}/audit?limit=100${after ? `&after=${after}` : ''}`);
    assert.equal(res.status, 200, res.text);
    found.push(...res.body.data.filter((e: any) => e.target.id === targetId));
    if (!res.body.has_more) break;
    after = res.body.last_id;
  }
  return found;
}

/** What `caller` gets from GET /api/v1/sessions on each replica. */
async function statusesOf(caller: Caller): Promise<{ status: number; code: string | undefined }[]> {
  const answers = [];
  for (const baseUrl of REPLICAS) {
    const res: any = await call(caller, `${API}/sessions?limit=1`, { baseUrl });
    answers.push({ status: res.status, code: res.body?.error?.code });
  }
  return answers;
}

describe('identity: an administrator suspends a user', () => {
  it('refuses every key and token of the user at once on every replica, audits it, and a reactivation restores them', async () => {
    const subject = `suspended-${randomUUID().slice(0, 8)}`;
    const fullKey = await createKey({ user_subject: subject, access: 'full' });
    const userId = fullKey.body.user_id as string;
    const agentsKey = await createKey({ user_id: userId, access: 'agents' });
    const appKey = await createKey({ user_id: userId, access: 'agents', app_id: `app-${randomUUID().slice(0, 8)}` });
    const callers: Caller[] = [
      { name: 'full key', token: fullKey.secret },
      { name: 'agents key', token: agentsKey.secret },
      asEndUser({ name: 'app key', token: appKey.secret }, 'end-user-1'),
      { name: 'user token', token: await signToken({ subject }) },
    ];
    // Every key verified (and so cached) on both replicas before the suspension.
    for (const caller of callers) assert.deepEqual(await statusesOf(caller), [{ status: 200, code: undefined }, { status: 200, code: undefined }], caller.name);

    const suspended = await call(bootstrap, `${ADMIN}/users/${userId}/suspend`, { method: 'POST' });
    assert.equal(suspended.status, 200, suspended.text);
    assert.equal(suspended.body.id, userId);
    assert.equal(typeof suspended.body.suspended_at, 'number');
    // No waiting: the answer came after every replica dropped the user's cached keys.
    for (const caller of callers) {
      assert.deepEqual(await statusesOf(caller), [{ status: 401, code: 'user_suspended' }, { status: 401, code: 'user_suspended' }], caller.name);
    }
    // A suspended user cannot mint a way around it either.
    assert.equal((await call(callers[0]!, `${ADMIN}/api-keys`, { body: { name: 'escape', access: 'full' } })).status, 401);
    const listed: any = await call(bootstrap, `${ADMIN}/users?kind=user&limit=100`);
    assert.equal(listed.status, 200);
    // Suspending again changes nothing (and writes no second entry).
    const again = await call(bootstrap, `${ADMIN}/users/${userId}/suspend`, { method: 'POST' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.suspended_at, suspended.body.suspended_at);

    const reactivated = await call(bootstrap, `${ADMIN}/users/${userId}/reactivate`, { method: 'POST', baseUrl: env.apiUrl2 });
    assert.equal(reactivated.status, 200, reactivated.text);
    assert.equal(reactivated.body.suspended_at, null);
    for (const caller of callers) assert.deepEqual(await statusesOf(caller), [{ status: 200, code: undefined }, { status: 200, code: undefined }], `${caller.name} after reactivation`);

    const actions = (await auditOf(userId)).map((entry) => entry.action);
    assert.deepEqual(actions.filter((action) => action.startsWith('user.')), ['user.reactivated', 'user.suspended']);
  });

  it('ends the user’s open event streams on every replica (a retry: hint); the reconnection is refused; another user’s stream goes on', async () => {
    const key = await createKey({ user_subject: `streaming-${randomUUID().slice(0, 8)}`, access: 'full' });
    const userId = key.body.user_id as string;
    const caller: Caller = { name: 'streaming user', token: key.body.secret };
    const session = await createSessionAs(caller);
    const streams = REPLICAS.map((baseUrl) => new RawSseClient(session.id, key.body.secret, baseUrl));
    const bystanderSession = await createSessionAs(bootstrap);
    const bystander = new RawSseClient(bystanderSession.id, bootstrap.token);
    try {
      await Promise.all([...streams, bystander].map((stream) => stream.until('agent.session.created')));
      assert.equal((await call(bootstrap, `${ADMIN}/users/${userId}/suspend`, { method: 'POST' })).status, 200);
      // The answer comes once every replica dropped the user's credentials; their streams end with them.
      await Promise.all(
        streams.map((stream, i) =>
          Promise.race([stream.readToEnd(), new Promise((_, reject) => setTimeout(() => reject(new Error(`the stream on replica ${i + 1} did not end`)), 10_000))]),
        ),
      );
      for (const stream of streams) assert.equal(stream.retry, 1000, 'ended with a retry: hint');
      const again = await call(caller, `${API}/sessions/${session.id}/events`, { headers: { accept: 'text/event-stream' } });
      assert.equal(again.status, 401, again.text);
      assert.equal(again.body.error.code, 'user_suspended');
      assert.equal(bystander.ended, false, 'another user’s stream is not ended');
    } finally {
      for (const stream of [...streams, bystander]) stream.destroy();
      await call(bootstrap, `${ADMIN}/users/${userId}/reactivate`, { method: 'POST' });
    }
  });

  it('ends the streams a revoked key opened, and only those: the same user’s other key streams on', async () => {
    const first = await createKey({ user_subject: `revoking-${randomUUID().slice(0, 8)}`, access: 'full' });
    const second = await createKey({ user_id: first.body.user_id, access: 'full' });
    const session = await createSessionAs({ name: 'first key', token: first.body.secret });
    const revoked = new RawSseClient(session.id, first.body.secret);
    const kept = new RawSseClient(session.id, second.body.secret);
    try {
      await Promise.all([revoked, kept].map((stream) => stream.until('agent.session.created')));
      assert.equal((await call(bootstrap, `${ADMIN}/api-keys/${first.id}`, { method: 'DELETE' })).status, 200);
      await Promise.race([revoked.readToEnd(), new Promise((_, reject) => setTimeout(() => reject(new Error('the revoked key’s stream did not end')), 10_000))]);
      assert.equal(revoked.retry, 1000);
      assert.equal(kept.ended, false, 'the other key’s stream goes on');
      // … and still delivers: a turn started after the revocation reaches it.
      const after = await call({ name: 'second key', token: second.body.secret }, `${API}/sessions/${session.id}/events`, {
        body: { events: [{ type: 'agent.session.input.message', input: 'after the revocation' }] },
        idempotencyKey: `revoke-${randomUUID()}`,
      });
      assert.equal(after.status, 202, after.text);
      await Promise.race([kept.until('agent.session.turn.completed'), new Promise((_, reject) => setTimeout(() => reject(new Error('the other key’s stream delivered no turn after the revocation')), 20_000))]);
      assert.equal(kept.ended, false, 'the other key’s stream is still open');
      assert.equal(revoked.events.filter((e) => e.type === 'agent.session.turn.completed').length, 0, 'the revoked key’s stream got nothing of that turn');
    } finally {
      revoked.destroy();
      kept.destroy();
    }
  });

  it('is for administrators, and refuses end users, the caller itself and unknown users', async () => {
    const subject = `plain-${randomUUID().slice(0, 8)}`;
    const key = await createKey({ user_subject: subject, access: 'full' });
    const plain: Caller = { name: 'plain user', token: key.secret };
    const victim = await createKey({ user_subject: `victim-${randomUUID().slice(0, 8)}`, access: 'full' });
    const byPlain = await call(plain, `${ADMIN}/users/${victim.body.user_id}/suspend`, { method: 'POST' });
    assert.equal(byPlain.status, 403, byPlain.text);
    assert.equal((await call({ name: 'victim', token: victim.secret }, `${API}/sessions?limit=1`)).status, 200, 'the refused suspension changed nothing');

    const self: any = await call(bootstrap, '/api/v1/me');
    assert.equal(self.status, 200, self.text);
    const selfId = self.body.user_id ?? self.body.actor_id ?? self.body.id;
    const selfSuspend = await call(bootstrap, `${ADMIN}/users/${selfId}/suspend`, { method: 'POST' });
    assert.equal(selfSuspend.status, 422, selfSuspend.text);

    const appKey = await createKey({ user_id: victim.body.user_id, access: 'agents', app_id: `app-${randomUUID().slice(0, 8)}` });
    const endUser = asEndUser({ name: 'end user', token: appKey.secret }, 'someone');
    assert.equal((await call(endUser, `${API}/sessions?limit=1`)).status, 200);
    const users: any = await call(bootstrap, `${ADMIN}/users?kind=end_user&limit=100`);
    const endUserRow = users.body.data.find((u: any) => u.parent_id === victim.body.user_id);
    assert.ok(endUserRow, users.text);
    const refusal = await call(bootstrap, `${ADMIN}/users/${endUserRow.id}/suspend`, { method: 'POST' });
    assert.equal(refusal.status, 422, refusal.text);
    assert.equal((await call(bootstrap, `${ADMIN}/users/${randomUUID()}/suspend`, { method: 'POST' })).status, 404);
    assert.equal((await call(bootstrap, `${ADMIN}/users/not-a-uuid/reactivate`, { method: 'POST' })).status, 404);
  });
});
