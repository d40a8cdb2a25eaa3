import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { API } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type Caller, createKey, createSessionAs, listSessionIds, newProductUser, signToken } from '../support/identity.js';

/** Every user of `kind` (a query value, as sent) that `match` accepts, following cursors (bounded). */
async function usersWhere(kind: string | null, match: (user: any) => boolean): Promise<any[]> {
  const found: any[] = [];
  let after: string | null = null;
  for (let page = 0; page < 50; page += 1) {
    const query = [kind === null ? null : `kind=${kind}`, 'limit=100', after ? `after=${after}` : null].filter(Boolean).join('&');
    const res: any = await call(bootstrap, `${ADMIN}/users?${query}`);
    assert.equal(res.status, 200, res.text);
    found.push(...res.body.data.filter(match));
    if (!res.body.has_more) return found;
    after = res.body.last_id;
  }
  throw new Error('more than 50 pages of users');
}

describe('identity: users by kind, one user one principal', () => {
  it('a key minted for a subject and that subject\'s user token are one principal, listed once as a user', async () => {
    const subject = `alice-${randomUUID().slice(0, 8)}`;
    // The key first: its user is made as the token would make it.
    const key = await createKey({ user_subject: subject, access: 'agents' });
    const byKey: Caller = { name: `key of ${subject}`, token: key.secret };
    const byToken: Caller = { name: `token of ${subject}`, token: await signToken({ subject }) };
    const fromKey = await createSessionAs(byKey, 'from the key');
    const fromToken = await createSessionAs(byToken, 'from the token');
    for (const caller of [byKey, byToken]) {
      const ids = await listSessionIds(caller);
      assert.ok(ids.includes(fromKey.id) && ids.includes(fromToken.id), `${caller.name} sees both sessions`);
      assert.equal((await call(caller, `${API}/sessions/${fromKey.id}`)).status, 200);
      assert.equal((await call(caller, `${API}/sessions/${fromToken.id}`)).status, 200);
    }

    const listed = await usersWhere(null, (u) => u.subject === subject);
    assert.equal(listed.length, 1, 'one user, listed once (the default kind is user)');
    assert.deepEqual(
      { id: listed[0].id, object: listed[0].object, kind: listed[0].kind, app_id: listed[0].app_id, parent_id: listed[0].parent_id, is_admin: listed[0].is_admin },
      { id: key.body.user_id, object: 'user', kind: 'user', app_id: null, parent_id: null, is_admin: false },
    );
    assert.equal(typeof listed[0].created_at, 'number');

    // The token first: a key minted afterwards for its subject joins the same user.
    const laterSubject = `bob-${randomUUID().slice(0, 8)}`;
    const bobToken: Caller = { name: 'bob\'s token', token: await signToken({ subject: laterSubject }) };
    const bobSession = await createSessionAs(bobToken, 'hello');
    const bobKey = await createKey({ user_subject: laterSubject, access: 'agents' });
    assert.ok((await listSessionIds({ name: 'bob\'s key', token: bobKey.secret })).includes(bobSession.id));
    // A user may mint a key for its own subject; another's is for administrators.
    const own = await call(bobToken, `${ADMIN}/api-keys`, { body: { name: 'own', access: 'agents', user_subject: laterSubject } });
    assert.equal(own.status, 201, own.text);
    assert.equal(own.body.user_id, bobKey.body.user_id);
    assert.equal((await call(bobToken, `${ADMIN}/api-keys`, { body: { name: 'other', access: 'agents', user_subject: subject } })).status, 403);
    const unknown = `nobody-${randomUUID().slice(0, 8)}`;
    assert.equal((await call(bobToken, `${ADMIN}/api-keys`, { body: { name: 'other', access: 'agents', user_subject: unknown } })).status, 403);
    assert.deepEqual(await usersWhere('all', (u) => u.subject === unknown), [], 'a refused key creates no user');
  });

  it('refuses a key naming its owner twice, or by an empty subject', async () => {
    const both = await call(bootstrap, `${ADMIN}/api-keys`, { body: { name: 'both', access: 'agents', user_id: randomUUID(), user_subject: 'carol' } });
    assert.equal(both.status, 422, both.text);
    assert.equal(both.body.error.code, 'validation_failed');
    assert.ok(both.body.error.details.fields.some((f: any) => f.field === 'user_subject'), both.text);
    const empty = await call(bootstrap, `${ADMIN}/api-keys`, { body: { name: 'empty', access: 'agents', user_subject: '' } });
    assert.equal(empty.status, 422, empty.text);
  });

  it('lists the end users of apps with their app_id, each kind apart or all together', async () => {
    const appId = `app-${randomUUID().slice(0, 8)}`;
    const { userId: ownerId } = await newProductUser('app owner');
    const appKey = await createKey({ user_id: ownerId, access: 'agents', app_id: appId });
    const endUser = asEndUser({ name: 'app', token: appKey.secret }, 'crm-user-42');
    await createSessionAs(endUser, 'hi from an end user');

    const ofApp = (u: any) => u.app_id === appId;
    const endUsers = await usersWhere('end_user', ofApp);
    assert.equal(endUsers.length, 1, 'the end user is listed once');
    assert.deepEqual(
      { kind: endUsers[0].kind, subject: endUsers[0].subject, app_id: endUsers[0].app_id, parent_id: endUsers[0].parent_id, is_admin: endUsers[0].is_admin },
      { kind: 'end_user', subject: 'crm-user-42', app_id: appId, parent_id: ownerId, is_admin: false },
    );
    assert.deepEqual(await usersWhere('user', ofApp), [], 'end users are not system users');
    assert.deepEqual(await usersWhere(null, ofApp), [], 'nor listed by default');
    assert.equal((await usersWhere('all', (u) => ofApp(u) || u.id === ownerId)).length, 2, 'all: the end user and the product user');
    assert.ok((await usersWhere('end_user', () => true)).every((u) => u.kind === 'end_user' && u.app_id !== null));
  });

  it('is for administrators: 403 otherwise; a bad kind is 422 and a cursor of another kind 400', async () => {
    const { caller } = await newProductUser('not an admin');
    const token: Caller = { name: 'a user token', token: await signToken() };
    for (const who of [caller, token]) {
      const res = await call(who, `${ADMIN}/users`);
      assert.equal(res.status, 403, `${who.name}: ${res.text}`);
      assert.equal(res.body.error.code, 'forbidden');
    }
    const bad = await call(bootstrap, `${ADMIN}/users?kind=robots`);
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.body.error.code, 'validation_failed');
    const [someUser] = (await call(bootstrap, `${ADMIN}/users?kind=user&limit=1`)).body.data;
    const cursor = await call(bootstrap, `${ADMIN}/users?kind=end_user&after=${someUser.id}`);
    assert.equal(cursor.status, 400, cursor.text);
    assert.equal(cursor.body.error.code, 'invalid_cursor');
  });
});
