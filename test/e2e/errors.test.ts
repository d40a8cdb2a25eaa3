import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { PROTOCOL_EVENT_TYPES } from '#libs/protocol';
import { env } from '../support/env.js';
import { API, createSession, http, newKey } from '../support/http.js';

function assertErrorShape(res: { body: any; headers: Headers }, code: string): void {
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(typeof res.body.error.type, 'string');
  assert.equal(typeof res.body.error.retryable, 'boolean');
  assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
  assert.equal(typeof res.body.error.details, 'object');
}

describe('errors', () => {
  it('answers unknown routes with 404 route_not_found in the error shape (credentials first: without them, 401)', async () => {
    const res = await http('/api/v1/nothing-here');
    assert.equal(res.status, 404);
    assertErrorShape(res, 'route_not_found');
    const anonymous = await http('/api/v1/nothing-here', { key: null });
    assert.equal(anonymous.status, 401);
    assertErrorShape(anonymous, 'unauthorized');
  });

  it('echoes a caller X-Request-Id', async () => {
    const res = await http(`${API}`, { headers: { 'x-request-id': 'trace-123' } });
    assert.equal(res.headers.get('x-request-id'), 'trace-123');
  });

  it('lists every bad field of a create: unknown fields, explicit nulls, bad types and bad input', async () => {
    const res = await http(`${API}/sessions`, {
      idempotencyKey: newKey(),
      body: { agent_id: 'default-chatbot', title: null, surprise: 1, stream: 'yes', input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://example.com/x.png' }] }] },
    });
    assert.equal(res.status, 422);
    assertErrorShape(res, 'validation_failed');
    const fields = res.body.error.details.fields.map((f: any) => f.field);
    for (const field of ['title', 'surprise', 'stream', 'input']) assert.ok(fields.includes(field), `${field} is listed: ${fields}`);
    const inputErrors = res.body.error.details.fields.find((f: any) => f.field === 'input').errors.join(' ');
    assert.match(inputErrors, /role must be "user"/);
    assert.match(inputErrors, /remote image URLs are not supported/);
  });

  it('enforces the input limits: 20 messages, 10 inline images per message, no remote images', async () => {
    const text = { role: 'user', content: [{ type: 'input_text', text: 'hi' }] };
    const tooMany = await http(`${API}/sessions`, { idempotencyKey: newKey(), body: { agent_id: 'default-chatbot', input: Array(21).fill(text) } });
    assert.equal(tooMany.status, 422);
    assert.match(JSON.stringify(tooMany.body.error.details), /1–20 messages/);
    const twenty = await http(`${API}/sessions`, { idempotencyKey: newKey(), body: { agent_id: 'default-chatbot', input: Array(20).fill(text) } });
    assert.equal(twenty.status, 201);

    const pixel = { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==' };
    const elevenImages = await http(`${API}/sessions`, {
      idempotencyKey: newKey(),
      body: { agent_id: 'default-chatbot', input: [{ role: 'user', content: Array(11).fill(pixel) }] },
    });
    assert.equal(elevenImages.status, 422);
    assert.match(JSON.stringify(elevenImages.body.error.details), /more than 10 images/);
    const withImage = await http(`${API}/sessions`, {
      idempotencyKey: newKey(),
      body: { agent_id: 'default-chatbot', input: [{ role: 'user', content: [{ type: 'input_text', text: 'look' }, pixel] }] },
    });
    assert.equal(withImage.status, 201);
    const input = await http(`${API}/sessions/${withImage.body.id}/inputs/${withImage.body.yuxi.receipt.input_id}`);
    const stored = input.body.messages[0].content[1];
    assert.equal(stored.type, 'input_image');
    assert.match(stored.file_id, /^[0-9a-f]{32}$/, 'the inline image is stored as a session file');
    assert.equal(stored.image_url, `${API}/sessions/${withImage.body.id}/files/${stored.file_id}/content`);
    const bytes = await fetch(`${env.apiUrl}${stored.image_url}`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    assert.equal(Buffer.from(await bytes.arrayBuffer()).toString('base64'), pixel.image_url.split(',')[1], 'its bytes are the ones sent');
  });

  it('validates events: exactly one, known type, no unknown fields', async () => {
    const session = await createSession();
    const url = `${API}/sessions/${session.id}/events`;
    const two = await http(url, {
      idempotencyKey: newKey(),
      body: { events: [{ type: 'agent.session.input.message', input: 'a' }, { type: 'agent.session.input.message', input: 'b' }] },
    });
    assert.equal(two.status, 422);
    assert.equal(two.body.error.code, 'validation_failed');
    const unknownType = await http(url, { idempotencyKey: newKey(), body: { events: [{ type: 'agent.session.input.dance' }] } });
    assert.equal(unknownType.status, 422);
    assert.equal(unknownType.body.error.code, 'unknown_event_type');
    const treeExtra = await http(url, { idempotencyKey: newKey(), body: { events: [{ type: 'yuxi.session.tree.stop', mode: 'all' }] } });
    assert.equal(treeExtra.status, 422);
    assert.equal(treeExtra.body.error.code, 'validation_failed');
    const resume = await http(url, { idempotencyKey: newKey(), body: { events: [{ type: 'yuxi.session.input.resume' }] } });
    assert.equal(resume.status, 422);
    assert.deepEqual(resume.body.error.details.fields.map((f: any) => f.field).sort(), ['events[0].response', 'events[0].turn_id', 'events[0].waitpoint_id']);
    const extra = await http(url, { idempotencyKey: newKey(), body: { events: [{ type: 'agent.session.input.message', input: 'x', turn_id: 'y' }] } });
    assert.equal(extra.status, 422);
    assert.deepEqual(extra.body.error.details.fields.map((f: any) => f.field), ['events[0].turn_id']);
    const badModel = await http(url, { idempotencyKey: newKey(), body: { events: [{ type: 'agent.session.input.message', input: 'x', yuxi: { model: 'nope:x' } }] } });
    assert.equal(badModel.status, 422);
    assert.equal(badModel.body.error.code, 'invalid_model');
  });

  it('rejects invalid JSON with 422 and oversized bodies with 413', async () => {
    const broken = await http(`${API}/sessions`, { idempotencyKey: newKey(), rawBody: '{"agent_id":' });
    assert.equal(broken.status, 422);
    assertErrorShape(broken, 'invalid_json');
    // The test stack runs with BODY_LIMIT=12mb (100mb by default).
    const huge = await http(`${API}/sessions`, { idempotencyKey: newKey(), body: { agent_id: 'default-chatbot', input: 'x'.repeat(13 * 1024 * 1024) } });
    assert.equal(huge.status, 413);
    assertErrorShape(huge, 'payload_too_large');
  });

  it('reads a body under the large limit only for the POSTs that carry inline images: other methods on their paths get 413 past 1 MB', async () => {
    // Otherwise a PUT or PATCH to the same path would be read up to BODY_LIMIT, past the per-user
    // bound on large bodies in flight (which counts POSTs), before routing refuses the method.
    const body = { input: 'x'.repeat(2 * 1024 * 1024) };
    for (const [method, path] of [['PUT', `${API}/sessions`], ['PATCH', `${API}/sessions/${randomUUID()}/events`], ['DELETE', `${API}/sessions/${randomUUID()}/events`]] as const) {
      const res = await http(path, { method, body });
      assert.equal(res.status, 413, `${method} ${path}: ${res.text}`);
      assertErrorShape(res, 'payload_too_large');
    }
  });

  it('rejects NUL characters, which Postgres cannot store, as a field error', async () => {
    const res = await http(`${API}/sessions`, {
      idempotencyKey: newKey(),
      body: { agent_id: 'default-chatbot', input: [{ role: 'user', content: [{ type: 'input_text', text: 'a\u0000b' }] }] },
    });
    assert.equal(res.status, 422);
    assertErrorShape(res, 'validation_failed');
    assert.equal(res.body.error.details.fields[0].field, 'input[0].content[0].text');
  });

  it('rejects a body that is not JSON with 415', async () => {
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey(), headers: { 'content-type': 'text/plain' }, method: 'POST' });
    assert.equal(res.status, 422, 'no body: validation');
    const plain = await fetch(`${env.apiUrl}${API}/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.apiKey}`, 'idempotency-key': newKey(), 'content-type': 'text/plain' },
      body: 'hello',
    });
    assert.equal(plain.status, 415);
    assert.equal(((await plain.json()) as any).error.code, 'unsupported_media_type');
  });

  it('404s unknown agents and sessions', async () => {
    const agent = await http(`${API}/sessions`, { idempotencyKey: newKey(), body: { agent_id: 'no-such-agent' } });
    assert.equal(agent.status, 404);
    assertErrorShape(agent, 'not_found');
    const session = await http(`${API}/sessions/not-a-uuid`);
    assert.equal(session.status, 404);
  });

  it('answers a non-UUID session id with 404 on every events submission, never 500', async () => {
    // A well-formed event of every type of the protocol (a type added later fails here until it is added).
    const id = randomUUID();
    const events: Record<(typeof PROTOCOL_EVENT_TYPES)[number], object> = {
      'agent.session.input.message': { input: 'hi' },
      'agent.session.input.cancel': {},
      'yuxi.session.input.promote': { input_id: id },
      'yuxi.session.input.cancel_input': { input_id: id },
      'yuxi.session.input.continue': {},
      'yuxi.session.input.resume': { turn_id: id, waitpoint_id: id, response: { type: 'answer', answers: [{ question_id: 'q', answer: 'a' }] } },
      'yuxi.session.input.compact': {},
      'yuxi.session.tree.stop': {},
      'yuxi.session.tree.continue': {},
      tool_result: { turn_id: id, call_id: 'call_1', success: true, output: 'done' },
      'agent.session.input.tool_result': { turn_id: id, call_id: 'call_1', success: true, output: [{ type: 'input_text', text: 'done' }] },
      'agent.session.input.mcp_approval_request_result': { request_id: `${id}:${id}:call_1`, response: { type: 'mcp_tool_call', decision: 'approve' } },
    };
    assert.deepEqual(Object.keys(events).sort(), [...PROTOCOL_EVENT_TYPES].sort());
    for (const event of Object.entries(events).map(([type, fields]) => ({ type, ...fields }))) {
      const res = await http(`${API}/sessions/nope/events`, { idempotencyKey: newKey(), body: { events: [event] } });
      assert.equal(res.status, 404, `${event.type}: ${res.text}`);
      assertErrorShape(res, 'not_found');
    }
  });

  it('refuses a body nested deeper than 64 levels with 422, not a stack overflow', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey(), rawBody: `{"agent_id":"default-chatbot","input":${deep}}` });
    assert.equal(res.status, 422, res.text);
    assertErrorShape(res, 'validation_failed');
    const anonymous = await http(`${API}/sessions`, { key: null, rawBody: deep });
    assert.equal(anonymous.status, 401, 'credentials are checked before the body is read');
  });

  it('reads boolean filters as exactly true or false: anything else is 422', async () => {
    for (const query of ['archived=1', 'is_pinned=yes', 'archived=TRUE']) {
      const res = await http(`${API}/sessions?${query}`);
      assert.equal(res.status, 422, query);
      assertErrorShape(res, 'validation_failed');
    }
    assert.equal((await http(`${API}/sessions?archived=false&is_pinned=true`)).status, 200);
  });

  it('finds the receipt of the create that carried the first input under its own key', async () => {
    const key = newKey('create');
    const created = await http(`${API}/sessions`, { idempotencyKey: key, body: { agent_id: 'default-chatbot', input: 'first' } });
    assert.equal(created.status, 201);
    const receipt = await http(`${API}/sessions/${created.body.id}/receipt?idempotency_key=${encodeURIComponent(key)}`);
    assert.equal(receipt.status, 200, receipt.text);
    assert.equal(receipt.body.input_id, created.body.yuxi.receipt.input_id);
  });

  it('answers a wrong method on a real path with 405 and an Allow header', async () => {
    const session = await createSession();
    const wrong = await http(`${API}/sessions/${session.id}`, { method: 'PUT', body: {} });
    assert.equal(wrong.status, 405, wrong.text);
    assertErrorShape(wrong, 'method_not_allowed');
    assert.equal(wrong.headers.get('allow'), 'DELETE, GET, HEAD, POST');
    const put = await http(`${API}/sessions`, { method: 'PUT', body: {} });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get('allow'), 'GET, HEAD, POST');
    assert.equal((await http(`${API}/sessions/${session.id}/nothing`)).status, 404, 'an unknown path stays 404');
  });
});
