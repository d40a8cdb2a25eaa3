import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { randomPng } from '../support/file-fixtures.js';
import { API } from '../support/http.js';
import { call, type Caller, signToken } from '../support/identity.js';

// Inline images count against the account's file quota and a per-session cap. The file-limits
// replica (scripts/test.mjs) allows 1 MiB per account and 512 KiB of images per session.

const MiB = 1024 * 1024;
const IMAGE = 300 * 1024;
const dataUrl = (bytes: Buffer): string => `data:image/png;base64,${bytes.toString('base64')}`;
const imageInput = (text: string) => [{ role: 'user', content: [{ type: 'input_text', text }, { type: 'input_image', image_url: dataUrl(randomPng(IMAGE)) }] }];

async function newUser(): Promise<Caller> {
  const caller: Caller = { name: 'images', token: await signToken({ subject: `img-quota-${randomUUID()}` }) };
  const me = await call(caller, '/api/v1/me', { baseUrl: env.apiUrlFileLimits });
  assert.equal(me.status, 200, me.text);
  return caller;
}

const createWithImage = (caller: Caller, text: string) =>
  call(caller, `${API}/sessions`, { baseUrl: env.apiUrlFileLimits, body: { agent_id: 'default-chatbot', input: imageInput(text) }, idempotencyKey: randomUUID() });

const followUpWithImage = (caller: Caller, sessionId: string, text: string) =>
  call(caller, `${API}/sessions/${sessionId}/events`, {
    baseUrl: env.apiUrlFileLimits,
    body: { events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: imageInput(text) }] },
    idempotencyKey: randomUUID(),
  });

describe('inline images count against the file quota and a per-session cap', () => {
  it('a submission whose images would pass the session\'s cap is 413 session_image_quota_exceeded; text still goes', async () => {
    const caller = await newUser();
    const created = await createWithImage(caller, 'first');
    assert.equal(created.status, 201, created.text);
    const refused = await followUpWithImage(caller, created.body.id, 'second');
    assert.equal(refused.status, 413, refused.text);
    assert.equal(refused.body.error.code, 'session_image_quota_exceeded');
    assert.equal(refused.body.error.details.quota_bytes, 512 * 1024);
    assert.ok(refused.body.error.details.used_bytes >= IMAGE, JSON.stringify(refused.body.error.details));
    // Text goes on: only images are capped.
    const text = await call(caller, `${API}/sessions/${created.body.id}/events`, {
      baseUrl: env.apiUrlFileLimits,
      body: { events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: 'no image' }] },
      idempotencyKey: randomUUID(),
    });
    assert.equal(text.status, 202, text.text);
  });

  it('the account\'s images together are held to FILE_QUOTA_BYTES, uploads included: 413 file_quota_exceeded', async () => {
    const caller = await newUser();
    // Three sessions of one image each fit in 1 MiB; a fourth does not.
    for (const name of ['one', 'two', 'three']) {
      const created = await createWithImage(caller, name);
      assert.equal(created.status, 201, created.text);
    }
    const refused = await createWithImage(caller, 'four');
    assert.equal(refused.status, 413, refused.text);
    assert.equal(refused.body.error.code, 'file_quota_exceeded');
    assert.equal(refused.body.error.details.quota_bytes, MiB);
    assert.ok(refused.body.error.details.used_bytes >= 3 * IMAGE);

    // An upload counts the images too.
    const form = new FormData();
    form.append('file', new Blob(['x'.repeat(200 * 1024)], { type: 'text/plain' }), 'notes.txt');
    const upload = await fetch(`${env.apiUrlFileLimits}${API}/files`, { method: 'POST', headers: { authorization: `Bearer ${caller.token}`, 'idempotency-key': randomUUID() }, body: form });
    const body = (await upload.json()) as any;
    assert.equal(upload.status, 413, JSON.stringify(body));
    assert.equal(body.error.code, 'file_quota_exceeded');

    // Another account is not affected.
    const other = await createWithImage(await newUser(), 'mine');
    assert.equal(other.status, 201, other.text);
  });
});
