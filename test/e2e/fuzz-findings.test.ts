import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API, createSession, http, newKey } from '../support/http.js';

// What the OpenAPI-driven fuzzer (zz-fuzz.test.ts) found, each pinned by the smallest request
// that showed it: no input may produce a 5xx, and every status answered is declared.

const ADMIN = '/api/v1/admin';

function assertError(res: { status: number; body: any; text: string }, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
}

describe('fuzzer findings', () => {
  it('a NUL in a path parameter is a 404, never a failed query (was 500 on agents and event submission)', async () => {
    assertError(await http(`${ADMIN}/agents/%00`, { method: 'DELETE' }), 404, 'not_found');
    assertError(await http(`${API}/%00`), 404, 'not_found');
    assertError(await http(`${API}/sessions/a%00b/events`, { body: { events: [{ type: 'yuxi.session.input.continue' }] }, idempotencyKey: newKey() }), 404, 'not_found');
  });

  it('a path that is not percent-encoded UTF-8 is a 404 like any unknown id (was an undeclared 422)', async () => {
    assertError(await http(`${API}/sessions/%ED%A0%80`), 404, 'not_found');
    assertError(await http(`${API}/sessions/%zz/archive`, { method: 'POST' }), 404, 'not_found');
    assertError(await http(`${ADMIN}/agents/%E0%A4`, { method: 'PUT', body: { name: 'Never stored' } }), 404, 'not_found');
  });

  it('a NUL in a query value is a field error (was 500 on the receipt lookup and the session filter)', async () => {
    const session = await createSession();
    const receipt = await http(`${API}/sessions/${session.id}/receipt?idempotency_key=%00`);
    assertError(receipt, 422, 'validation_failed');
    assert.deepEqual(receipt.body.error.details.fields, [{ field: 'idempotency_key', errors: ['must not contain the NUL character (U+0000)'] }]);
    assertError(await http(`${API}/sessions?agent_id=a%00`), 422, 'validation_failed');
  });

  it('a lone surrogate in a JSON body is a field error (was 500: jsonb cannot store it)', async () => {
    // Valid JSON for a string no UTF-8 can hold: "\ud800" without its low half.
    const key = await http(`${ADMIN}/api-keys`, { rawBody: '{"name":"\\ud800","access":"agents"}' });
    assertError(key, 422, 'validation_failed');
    assert.deepEqual(key.body.error.details.fields, [{ field: 'name', errors: ['must be well-formed Unicode (no lone surrogate)'] }]);
    const create = await http(`${API}/sessions`, { rawBody: '{"agent_id":"default-chatbot","input":"x\\udfffy"}', idempotencyKey: newKey() });
    assertError(create, 422, 'validation_failed');
    assert.equal(create.body.error.details.fields[0].field, 'input');
    const pair = await http(`${API}/sessions`, { rawBody: '{"agent_id":"default-chatbot","input":"a whole pair \\ud83e\\udd6d is fine"}', idempotencyKey: newKey() });
    assert.equal(pair.status, 201, pair.text);
  });

  it('declares what the fuzzer saw undeclared: 403 for X-End-User-Id on every /api operation, 404 on an agent replace', async () => {
    const refused = await http(`${API}/sessions`, { headers: { 'x-end-user-id': 'someone' } });
    assertError(refused, 403, 'forbidden');
    const document = (await http('/openapi.json', { key: null })).body;
    for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
      if (!path.startsWith('/api/')) continue;
      for (const [method, operation] of Object.entries<any>(item)) assert.ok(operation.responses['403'], `${method.toUpperCase()} ${path} declares 403`);
    }
    assert.ok(document.paths['/api/v1/admin/agents/{agent_id}'].put.responses['404'], 'PUT agent declares 404 (a private agent of another user)');
  });
});
