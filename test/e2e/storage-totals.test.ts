import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, newProductUser, until } from '../support/identity.js';

// Storage accounting on the suite's stack: the worker measures active sessions into the owners' and
// projects' totals (GET /admin/storage, GET /projects/{id}/storage), and the file-limits replica
// (STORAGE_QUOTA_BYTES=4194304, scripts/test.mjs) refuses an owner past it at acceptance.

const QUOTA = 4 * 1024 * 1024;

async function turnsCompleted(caller: Caller, sessionId: string, count: number): Promise<void> {
  const done = await until(
    async () => {
      const res = await call(caller, `${API}/sessions/${sessionId}/turns?order=asc&limit=100`);
      const data = res.body?.data as any[] | undefined;
      return data && data.length === count && data.every((t) => t.status === 'completed') ? true : undefined;
    },
    { attempts: 600, intervalMs: 100 },
  );
  assert.ok(done, `${count} completed turns of ${sessionId}`);
}

async function sessionStorage(caller: Caller, sessionId: string): Promise<any> {
  const res = await call(caller, `${API}/sessions/${sessionId}/storage`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** The owner's total from the admin route once `ready` holds for it (bounded: the worker measures within a few sweeps of 1 s). */
async function ownerTotal(ownerId: string, ready: (total: any) => boolean, query = ''): Promise<any> {
  const total = await until(
    async () => {
      const res = await call(bootstrap, `${ADMIN}/storage?owner_id=${ownerId}${query}`);
      assert.equal(res.status, 200, res.text);
      const first = res.body.data[0];
      return first && ready(first) ? first : undefined;
    },
    { attempts: 300, intervalMs: 200 },
  );
  assert.ok(total, `a total of owner ${ownerId} as expected`);
  return total;
}

const message = (input: string) => ({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input }] });

describe('storage accounting: owner and project totals, and the storage quota', () => {
  it('totals an owner\'s and its project\'s sessions as the storage route measures them; viewers and up only; the project route is the owner\'s', async () => {
    const { userId, caller } = await newProductUser('storage owner');
    const project = await call(caller, `${API}/projects`, { body: { name: 'storage accounting' } });
    assert.equal(project.status, 201, project.text);
    const inProject = await call(caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', project_id: project.body.id, input: 'in the project' }, idempotencyKey: randomUUID() });
    const alone = await call(caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', input: 'outside any project' }, idempotencyKey: randomUUID() });
    assert.equal(inProject.status, 201, inProject.text);
    assert.equal(alone.status, 201, alone.text);
    await turnsCompleted(caller, inProject.body.id, 1);
    await turnsCompleted(caller, alone.body.id, 1);
    const projectBytes = (await sessionStorage(caller, inProject.body.id)).total_bytes as number;
    const allBytes = projectBytes + ((await sessionStorage(caller, alone.body.id)).total_bytes as number);

    // The totals reach what the sessions store once the worker has measured both after their turns.
    const total = await ownerTotal(userId, (t) => t.bytes === allBytes && t.sessions === 2);
    assert.equal(total.object, 'yuxi.storage.total');
    assert.deepEqual([total.id, total.owner_id, total.project_id, total.quota_bytes], [userId, userId, null, null]);
    assert.ok(total.rows > 0 && total.measured_at > 0 && total.summed_at >= total.measured_at, JSON.stringify(total));
    const byProject = await ownerTotal(userId, (t) => t.bytes === projectBytes, '&by=project');
    assert.deepEqual([byProject.id, byProject.project_id, byProject.project_name, byProject.sessions], [`${userId}/${project.body.id}`, project.body.id, 'storage accounting', 1]);
    const own = await call(caller, `${API}/projects/${project.body.id}/storage`);
    assert.equal(own.status, 200, own.text);
    assert.deepEqual([own.body.object, own.body.project_id, own.body.bytes, own.body.sessions], ['yuxi.project.storage', project.body.id, projectBytes, 1]);

    // Another owner's project is not found; the admin route is for viewers, operators and administrators.
    const other = await newProductUser('storage stranger');
    assert.equal((await call(other.caller, `${API}/projects/${project.body.id}/storage`)).status, 404);
    const forbidden = await call(other.caller, `${ADMIN}/storage`);
    assert.deepEqual([forbidden.status, forbidden.body.error.code], [403, 'forbidden']);

    // Largest first, in cursor pages; a cursor that is no total of the list is 400.
    const first = await call(bootstrap, `${ADMIN}/storage?limit=2`);
    assert.equal(first.status, 200, first.text);
    assert.ok(first.body.data.length >= 1 && first.body.data.length <= 2);
    if (first.body.has_more) {
      const next = await call(bootstrap, `${ADMIN}/storage?limit=2&after=${first.body.last_id}`);
      assert.equal(next.status, 200, next.text);
      assert.ok(next.body.data.every((t: any) => t.bytes <= first.body.data.at(-1).bytes && !first.body.data.some((f: any) => f.id === t.id)));
    }
    assert.ok(first.body.data.every((t: any, i: number) => i === 0 || t.bytes <= first.body.data[i - 1].bytes));
    // No total, or no uuid at all (36 hyphens, 36 hex digits, another list's id): 400, never a failed cast.
    for (const after of [randomUUID(), '-'.repeat(36), 'a'.repeat(36), `${userId}/${project.body.id}`]) {
      const badCursor = await call(bootstrap, `${ADMIN}/storage?after=${encodeURIComponent(after)}`);
      assert.deepEqual([badCursor.status, badCursor.body.error?.code], [400, 'invalid_cursor'], `${after}: ${badCursor.text}`);
    }
    const badProjectCursor = await call(bootstrap, `${ADMIN}/storage?by=project&after=${'f'.repeat(36)}/x`);
    assert.deepEqual([badProjectCursor.status, badProjectCursor.body.error?.code], [400, 'invalid_cursor'], badProjectCursor.text);
    // A project filter on the owners' list would only ever answer nothing: 422 naming it.
    const ownersOfProject = await call(bootstrap, `${ADMIN}/storage?project_id=${project.body.id}`);
    assert.deepEqual([ownersOfProject.status, ownersOfProject.body.error?.code], [422, 'validation_failed'], ownersOfProject.text);
    assert.deepEqual(ownersOfProject.body.error.details.fields.map((f: any) => f.field), ['project_id']);
    const badBy = await call(bootstrap, `${ADMIN}/storage?by=tenant`);
    assert.deepEqual([badBy.status, badBy.body.error.code], [422, 'validation_failed']);
  });

  it('refuses an owner past STORAGE_QUOTA_BYTES at acceptance with 413 and the figures, writing nothing; a replay still replays; deleting the session frees it; another owner goes on', async () => {
    const { userId, caller } = await newProductUser('storage quota');
    // Written through the first replica (no quota there): a file past the quota, attached to the session's first input (a session's files count at their size).
    const draft = await uploadDraft(randomBytes(QUOTA / 2 + 50_000).toString('hex'), 'large.txt', { token: caller.token, contentType: 'text/plain' });
    const created = await call(caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', input: 'over quota', yuxi: { attachment_file_ids: [draft.id] } }, idempotencyKey: randomUUID() });
    assert.equal(created.status, 201, created.text);
    const sessionId: string = created.body.id;
    const acceptedKey = randomUUID();
    const acceptedBody = message('accepted before the quota was reached');
    const accepted = await call(caller, `${API}/sessions/${sessionId}/events`, { body: acceptedBody, idempotencyKey: acceptedKey });
    assert.equal(accepted.status, 202, accepted.text);
    assert.ok((await sessionStorage(caller, sessionId)).total_bytes >= QUOTA);
    await ownerTotal(userId, (t) => t.bytes >= QUOTA);
    const before = await sessionStorage(caller, sessionId);

    // On the quota's replica: a new message is refused with the figures, and nothing of it is written (the same key is refused again: no receipt).
    const key = randomUUID();
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const refused = await call(caller, `${API}/sessions/${sessionId}/events`, { baseUrl: env.apiUrlFileLimits, body: message('one more'), idempotencyKey: key });
      assert.equal(refused.status, 413, refused.text);
      assert.equal(refused.body.error.code, 'storage_quota_exceeded');
      assert.equal(refused.body.error.retryable, false);
      assert.equal(refused.body.error.details.quota_bytes, QUOTA);
      assert.ok(refused.body.error.details.used_bytes >= QUOTA, JSON.stringify(refused.body.error.details));
    }
    // The turns may still run; the inputs are only what was accepted.
    const after = await sessionStorage(caller, sessionId);
    assert.equal(after.inputs.rows, before.inputs.rows);
    assert.equal(before.inputs.rows, 2);
    // A create with a first input is refused too; the replay of a message accepted before is its first answer.
    const create = await call(caller, `${API}/sessions`, { baseUrl: env.apiUrlFileLimits, body: { agent_id: 'default-chatbot', input: 'new work' }, idempotencyKey: randomUUID() });
    assert.deepEqual([create.status, create.body.error?.code], [413, 'storage_quota_exceeded']);
    const replay = await call(caller, `${API}/sessions/${sessionId}/events`, { baseUrl: env.apiUrlFileLimits, body: acceptedBody, idempotencyKey: acceptedKey });
    assert.equal(replay.status, 202, replay.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.input_id, accepted.body.input_id);

    // Deleting the session frees the quota at the accounting's next pass (its rows are stored until the purge, days later).
    await turnsCompleted(caller, sessionId, 2);
    const deleted = await call(caller, `${API}/sessions/${sessionId}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);
    const freed = await until(
      async () => {
        const res = await call(bootstrap, `${ADMIN}/storage?owner_id=${userId}`);
        assert.equal(res.status, 200, res.text);
        return res.body.data.length === 0 ? true : undefined;
      },
      { attempts: 300, intervalMs: 200 },
    );
    assert.ok(freed, 'the deleted session left its owner\'s total');
    const again = await call(caller, `${API}/sessions`, { baseUrl: env.apiUrlFileLimits, body: { agent_id: 'default-chatbot', input: 'after the delete' }, idempotencyKey: randomUUID() });
    assert.equal(again.status, 201, again.text);

    // Another owner, far below the quota, is unaffected on the same replica.
    const other = await newProductUser('storage quota neighbour');
    const theirs = await call(other.caller, `${API}/sessions`, { baseUrl: env.apiUrlFileLimits, body: { agent_id: 'default-chatbot', input: 'mine' }, idempotencyKey: randomUUID() });
    assert.equal(theirs.status, 201, theirs.text);
  });
});
