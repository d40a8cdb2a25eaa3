import assert from 'node:assert/strict';
import { API, newKey } from './http.js';
import { ADMIN, bootstrap, call, type Caller, newProductUser, until } from './identity.js';

// The people and sessions of the console's browser tests (test/e2e/console-sessions.test.ts).

/** A product user with a role granted by the bootstrap administrator (null: none). */
export async function userWithRole(name: string, role: 'operator' | 'viewer' | null): Promise<{ userId: string; caller: Caller }> {
  const user = await newProductUser(name);
  if (role) {
    const granted = await call(bootstrap, `${ADMIN}/users/${user.userId}/role`, { method: 'PUT', body: { role } });
    assert.equal(granted.status, 200, granted.text);
  }
  return { userId: user.userId, caller: user.caller };
}

/** A session of `owner` with a title and a first input (any agent). */
export async function sessionOf(owner: Caller, body: { title?: string; input?: string; agent_id?: string }): Promise<any> {
  const res = await call(owner, `${API}/sessions`, { body: { agent_id: 'default-chatbot', ...body }, idempotencyKey: newKey('console') });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** Waits (bounded) until the owner reads the session in `status`; the session then. */
export async function statusOf(owner: Caller, sessionId: string, status: string): Promise<any> {
  const session = await until(
    async () => {
      const res = await call(owner, `${API}/sessions/${sessionId}`);
      return res.body?.status === status ? res.body : undefined;
    },
    { attempts: 150, intervalMs: 100 },
  );
  assert.ok(session, `session ${sessionId} reached ${status}`);
  return session;
}
