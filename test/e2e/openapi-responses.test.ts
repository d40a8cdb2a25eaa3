import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { env } from '../support/env.js';
import { type HttpResult, http, newKey, type RequestOptions } from '../support/http.js';
import { signToken } from '../support/identity.js';
import { OpenApiSchemas } from '../support/openapi-schema.js';
import { SseStream } from '../support/sse.js';

const SESSIONS = '/api/v1/agents/sessions';
const SESSION = `${SESSIONS}/{session_id}`;
const SLOW = 'one two three four five six seven eight nine ten [[delay:80]]';

type Method = 'get' | 'post' | 'put' | 'delete';

// Real calls on the real stack, each checked against the live /openapi.json: the status is one the
// operation declares, and the JSON body conforms to the schema declared for it (closed: no field the
// document does not name). Errors also name only `details` keys the document declares.
describe('responses conform to the OpenAPI document', () => {
  let schemas: OpenApiSchemas;
  let detailKeys: string[];
  const streams: SseStream[] = [];

  before(async () => {
    schemas = await OpenApiSchemas.live();
    detailKeys = Object.keys(schemas.document.components.schemas.ErrorDetailsDto.properties);
  });
  after(() => streams.forEach((s) => s.close()));

  async function subscribe(sessionId: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    return stream;
  }

  async function call(method: Method, template: string, params: Record<string, string> = {}, options: RequestOptions & { query?: string } = {}): Promise<HttpResult> {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? `missing-${name}`));
    const res = await http(`${path}${options.query ?? ''}`, { ...options, method: method.toUpperCase() });
    const operation = schemas.document.paths[template]?.[method];
    assert.ok(operation, `${method} ${template} is documented`);
    const response = operation.responses[String(res.status)];
    assert.ok(response, `${method} ${template} answered ${res.status}, which it does not declare: ${res.text}`);
    const schema = response.content?.['application/json']?.schema;
    assert.ok(schema, `${method} ${template} ${res.status} declares a JSON body`);
    assert.deepEqual(schemas.problemsFor(schema, res.body), [], `${method} ${template} ${res.status}: ${res.text}`);
    if (res.status >= 400) {
      const unknown = Object.keys(res.body.error.details).filter((key) => !detailKeys.includes(key));
      assert.deepEqual(unknown, [], `${res.body.error.code} details keys are documented: ${res.text}`);
    }
    return res;
  }
  const idem = (body: unknown): RequestOptions => ({ body, idempotencyKey: newKey('doc') });
  const event = (sessionId: string, body: object): Promise<HttpResult> => call('post', `${SESSION}/events`, { session_id: sessionId }, idem({ events: [body] }));

  it('sessions, inputs, turns, runs and items of a finished turn', async () => {
    const createKey = newKey('create');
    const created = await call('post', SESSIONS, {}, { body: { agent_id: 'default-chatbot', title: 'Contract', input: 'hello contract' }, idempotencyKey: createKey });
    assert.equal(created.status, 201);
    const session_id = created.body.id;
    const stream = await subscribe(session_id);
    const done = await stream.waitForType('agent.session.turn.completed');
    stream.close();
    const turn_id = done.data.turn_id;

    assert.equal((await call('get', SESSIONS, {}, { query: '?limit=5&order=asc' })).status, 200);
    assert.equal((await call('get', SESSION, { session_id })).status, 200);
    const updated = await call('post', SESSION, { session_id }, { body: { yuxi: { title: 'Renamed', is_pinned: true, unread: false } } });
    assert.equal(updated.status, 200);
    assert.equal((await call('get', `${SESSION}/state`, { session_id })).status, 200);
    assert.equal((await call('get', `${SESSION}/queue`, { session_id })).status, 200);
    const receipt = await call('get', `${SESSION}/receipt`, { session_id }, { query: `?idempotency_key=${createKey}` });
    assert.equal(receipt.status, 200);
    const input = await call('get', `${SESSION}/inputs/{input_id}`, { session_id, input_id: receipt.body.input_id });
    assert.equal(input.status, 200);
    assert.ok(input.body.items.length > 0, 'the consumed input lists its items');
    assert.equal((await call('get', `${SESSION}/turns`, { session_id })).status, 200);
    const turn = await call('get', `${SESSION}/turns/{turn_id}`, { session_id, turn_id });
    assert.equal(turn.status, 200);
    assert.ok(turn.body.yuxi.usage, 'the turn reports its usage');
    assert.equal((await call('get', `${SESSION}/turns/{turn_id}/items`, { session_id, turn_id })).status, 200);
    assert.equal((await call('get', `${SESSION}/items`, { session_id }, { query: '?order=asc' })).status, 200);
    assert.equal((await call('get', `${SESSION}/runs/{run_id}`, { session_id, run_id: turn.body.yuxi.result_run_id })).status, 200);
    assert.equal((await call('post', `${SESSION}/archive`, { session_id })).status, 200);
  });

  it('a waitpoint in the session, the turn and the state; answering it; the errors around it', async () => {
    const created = await call('post', SESSIONS, {}, idem({ agent_id: 'default-chatbot', input: '[[ask:Which colour?]]' }));
    const session_id = created.body.id;
    const stream = await subscribe(session_id);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    const { turn_id, waitpoint } = waiting.data;
    const session = await call('get', SESSION, { session_id });
    assert.equal(session.body.yuxi.current_turn.waitpoint.id, waitpoint.id);
    assert.equal((await call('get', `${SESSION}/state`, { session_id })).body.current_turn.waitpoint.kind, 'question');
    assert.equal((await call('get', `${SESSION}/turns/{turn_id}`, { session_id, turn_id })).body.yuxi.waitpoint.questions.length, 1);

    const resume = (answers: object[]) => ({ type: 'yuxi.session.input.resume', turn_id, waitpoint_id: waitpoint.id, response: { type: 'answer', answers } });
    const empty = await event(session_id, resume([]));
    assert.equal(empty.body.error.code, 'validation_failed');
    const wrongKind = await event(session_id, { ...resume([]), response: { type: 'approval', decisions: [{ call_id: 'call_1', decision: 'approve' }] } });
    assert.equal(wrongKind.body.error.code, 'waitpoint_incomplete');
    assert.equal(wrongKind.body.error.details.kind, 'question');
    const foreign = await event(session_id, resume([{ question_id: 'q_other', answer: 'blue' }]));
    assert.equal(foreign.body.error.code, 'waitpoint_stale');
    const answer = { question_id: waitpoint.questions[0].question_id, answer: 'blue' };
    const stale = await event(session_id, { ...resume([answer]), waitpoint_id: 'wp_gone' });
    assert.equal(stale.body.error.code, 'waitpoint_stale');
    const busy = await event(session_id, { type: 'agent.session.input.message', input: 'hello?' });
    assert.equal(busy.body.error.code, 'turn_requires_action');
    const answered = await event(session_id, resume([answer]));
    assert.equal(answered.status, 202);
    await stream.waitForType('agent.session.turn.completed', turn_id);
    stream.close();
  });

  it('a queue with a pending input, its cancellation, and a cancelled turn', async () => {
    const created = await call('post', SESSIONS, {}, idem({ agent_id: 'default-chatbot', input: SLOW }));
    const session_id = created.body.id;
    const stream = await subscribe(session_id);
    const started = await stream.waitForType('agent.session.turn.created');
    const queued = await event(session_id, { type: 'agent.session.input.message', input: 'later', yuxi: { mode: 'follow_up' } });
    assert.equal(queued.status, 202);
    const queue = await call('get', `${SESSION}/queue`, { session_id });
    assert.deepEqual(queue.body.data.map((i: any) => i.id), [queued.body.input_id]);
    assert.equal((await call('get', `${SESSION}/inputs/{input_id}`, { session_id, input_id: queued.body.input_id })).body.status, 'pending');
    assert.equal((await event(session_id, { type: 'yuxi.session.input.cancel_input', input_id: queued.body.input_id })).status, 202);
    const again = await event(session_id, { type: 'yuxi.session.input.cancel_input', input_id: queued.body.input_id });
    assert.equal(again.body.error.details.status, 'cancelled');
    const wrongRun = await event(session_id, { type: 'agent.session.input.cancel', yuxi: { expected_run_id: 'run_other' } });
    assert.equal(wrongRun.body.error.code, 'state_conflict');
    assert.equal((await event(session_id, { type: 'agent.session.input.cancel' })).status, 202);
    await stream.waitForType('agent.session.turn.cancelled', started.data.turn_id);
    stream.close();
    const turn = await call('get', `${SESSION}/turns/{turn_id}`, { session_id, turn_id: started.data.turn_id });
    assert.equal(turn.body.yuxi.runs[0].status, 'cancelled');
  });

  it('errors: validation, an unknown event type, a reused key, a wrong method, unknown ids', async () => {
    const invalid = await call('post', SESSIONS, {}, idem({ agent_id: '' }));
    assert.equal(invalid.body.error.code, 'validation_failed');
    assert.ok(invalid.body.error.details.fields.length > 0);
    const session_id = (await call('post', SESSIONS, {}, idem({ agent_id: 'default-chatbot' }))).body.id;
    const unknownType = await event(session_id, { type: 'agent.session.input.dance' });
    assert.equal(unknownType.body.error.code, 'unknown_event_type');
    const key = newKey('reuse');
    await call('post', `${SESSION}/events`, { session_id }, { body: { events: [{ type: 'agent.session.input.message', input: 'one' }] }, idempotencyKey: key });
    const conflict = await call('post', `${SESSION}/events`, { session_id }, { body: { events: [{ type: 'agent.session.input.message', input: 'two' }] }, idempotencyKey: key });
    assert.equal(conflict.body.error.code, 'idempotency_conflict');
    const noKey = await call('post', `${SESSION}/events`, { session_id }, { body: { events: [{ type: 'agent.session.input.message', input: 'three' }] } });
    assert.equal(noKey.body.error.code, 'idempotency_key_required');
    assert.equal((await call('get', `${SESSION}/turns/{turn_id}`, { session_id, turn_id: 'nope' })).status, 404);
    assert.equal((await call('get', `${SESSION}/receipt`, { session_id }, { query: '?idempotency_key=never-used' })).status, 404);
    assert.equal((await call('get', SESSION, { session_id }, { key: 'yx_not_a_key' })).status, 401);
    assert.equal((await call('get', SESSIONS, {}, { query: '?archived=1' })).status, 422);
    assert.equal((await call('get', SESSIONS, {}, { query: '?after=not-an-id' })).body.error.code, 'invalid_cursor');

    // A wrong method on a real path is 405 with Allow; `details.allow` says the same.
    const res = await http(`${SESSIONS}/${session_id}/state`, { method: 'DELETE' });
    assert.equal(res.status, 405);
    assert.deepEqual(schemas.problems('ErrorResponseDto', res.body), []);
    assert.ok(res.body.error.details.allow.includes('GET'));
    assert.equal(res.headers.get('allow'), res.body.error.details.allow.join(', '));
  });

  it('a public operation refuses a request body that is not JSON with 415, as it declares', async () => {
    // fetch cannot send a GET with a body; a plain HTTP client can.
    const res = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = request(`${env.apiUrl}/health`, { method: 'GET', headers: { 'content-type': 'text/plain', 'content-length': '5' } }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end('hello');
    });
    assert.equal(res.status, 415);
    const declared = schemas.document.paths['/health'].get.responses['415'];
    assert.ok(declared, '415 is declared');
    assert.deepEqual(schemas.problemsFor(declared.content['application/json'].schema, res.body), []);
  });

  it('projects: created, read, listed, a session in one, deleted; the errors around them', async () => {
    const PROJECTS = '/api/v1/agents/projects';
    const PROJECT = `${PROJECTS}/{project_id}`;
    const created = await call('post', PROJECTS, {}, { body: { name: 'Doc project', description: 'documented' } });
    assert.equal(created.status, 201);
    const project_id = created.body.id;
    assert.equal((await call('get', PROJECT, { project_id })).status, 200);
    assert.equal((await call('get', PROJECTS, {}, { query: '?limit=1' })).status, 200);
    assert.equal((await call('get', PROJECTS, {}, { query: '?after=nope' })).body.error.code, 'invalid_cursor');
    assert.equal((await call('post', PROJECTS, {}, { body: { name: '' } })).body.error.code, 'validation_failed');
    const session = await call('post', SESSIONS, {}, idem({ agent_id: 'default-chatbot', project_id }));
    assert.equal(session.status, 201);
    assert.equal((await call('delete', PROJECT, { project_id })).status, 200);
    assert.equal((await call('get', PROJECT, { project_id })).status, 404);
    assert.equal((await call('delete', PROJECT, { project_id })).status, 404);
    assert.equal((await call('post', SESSIONS, {}, idem({ agent_id: 'default-chatbot', project_id }))).status, 404);
    const refused = await event(session.body.id, { type: 'agent.session.input.message', input: 'after the delete' });
    assert.equal(refused.body.error.code, 'state_conflict');
  });

  it('agents, and the admin routes: agents, API keys, the audit trail, the users', async () => {
    assert.equal((await call('get', '/api/v1/agents')).status, 200);
    assert.equal((await call('get', '/api/v1/agents/{agent_id}', { agent_id: 'default-chatbot' })).status, 200);
    assert.equal((await call('get', '/api/v1/admin/agents')).status, 200);
    const agent_id = `doc-${newKey('a').slice(-8)}`;
    const put = await call('put', '/api/v1/admin/agents/{agent_id}', { agent_id }, { body: { name: 'Doc agent', model: 'scripted:echo', limits: { max_tool_calls: 3 } } });
    assert.equal(put.status, 201);
    assert.equal((await call('put', '/api/v1/admin/agents/{agent_id}', { agent_id }, { body: { name: 'Doc agent v2' } })).status, 200);
    const bad = await call('put', '/api/v1/admin/agents/{agent_id}', { agent_id }, { body: { name: 'x', limits: { max_tool_calls: -1 } } });
    assert.equal(bad.body.error.code, 'invalid_agent');
    const VERSIONS = '/api/v1/admin/agents/{agent_id}/versions';
    const versions = await call('get', VERSIONS, { agent_id }, { query: '?limit=1' });
    assert.equal(versions.status, 200);
    assert.deepEqual([versions.body.data[0].version, versions.body.has_more], [2, true]);
    assert.equal((await call('get', VERSIONS, { agent_id }, { query: `?order=asc&after=${versions.body.last_id}` })).body.data.length, 0);
    assert.equal((await call('get', VERSIONS, { agent_id }, { query: '?after=7' })).body.error.code, 'invalid_cursor');
    assert.equal((await call('get', VERSIONS, { agent_id }, { query: '?limit=1000' })).body.error.code, 'validation_failed');
    assert.equal((await call('get', VERSIONS, { agent_id: 'no-such-agent' })).body.error.code, 'not_found');
    assert.equal((await call('delete', '/api/v1/admin/agents/{agent_id}', { agent_id })).status, 200);

    const key = await call('post', '/api/v1/admin/api-keys', {}, { body: { name: 'doc key', access: 'agents', rate_limit_per_minute: 60 } });
    assert.equal(key.status, 201);
    assert.equal((await call('get', '/api/v1/admin/api-keys')).status, 200);
    const forbidden = await call('get', '/api/v1/admin/api-keys', {}, { key: key.body.secret });
    assert.equal(forbidden.status, 403);
    assert.equal((await call('get', '/api/v1/admin/users', {}, { key: key.body.secret })).status, 403);
    assert.equal((await call('get', '/api/v1/admin/agents/{agent_id}/versions', { agent_id: 'default-chatbot' }, { key: key.body.secret })).status, 403);
    assert.equal((await call('delete', '/api/v1/admin/api-keys/{key_id}', { key_id: key.body.id })).status, 200);
    assert.equal((await call('get', '/api/v1/admin/audit', {}, { query: '?limit=10' })).status, 200);
    assert.equal((await call('get', '/api/v1/admin/users', {}, { query: '?kind=all&limit=10' })).status, 200);
    assert.equal((await call('get', '/api/v1/admin/users', {}, { query: '?kind=end_user' })).status, 200);
    assert.equal((await call('get', '/api/v1/admin/users', {}, { query: '?kind=robots' })).body.error.code, 'validation_failed');
    const forSubject = await call('post', '/api/v1/admin/api-keys', {}, { body: { name: 'doc subject key', access: 'agents', user_subject: `doc-${newKey('s').slice(-8)}` } });
    assert.equal(forSubject.status, 201);
  });

  it('the operator API: roles, the cross-owner session search and read, an operator\'s control events, and the errors around them', async () => {
    const key = await call('post', '/api/v1/admin/api-keys', {}, { body: { name: 'doc operator', access: 'full', user_subject: `doc-op-${newKey('s').slice(-8)}` } });
    assert.equal(key.status, 201);
    const user_id = key.body.user_id;
    const role = await call('put', '/api/v1/admin/users/{user_id}/role', { user_id }, { body: { role: 'operator' } });
    assert.equal(role.status, 200);
    assert.equal((await call('put', '/api/v1/admin/users/{user_id}/role', { user_id }, { body: { role: 'root' } })).body.error.code, 'validation_failed');
    assert.equal((await call('put', '/api/v1/admin/users/{user_id}/role', { user_id: newKey('u').slice(-36) }, { body: { role: null } })).status, 404);

    const created = await call('post', SESSIONS, {}, { body: { agent_id: 'default-chatbot', title: 'Operated', input: 'ask me [[ask:Proceed?]]' }, idempotencyKey: newKey('create') });
    const session_id = created.body.id;
    const stream = await subscribe(session_id);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    const operator = { key: key.body.secret };
    const list = await call('get', '/api/v1/admin/sessions', {}, { ...operator, query: `?waiting=true&q=Operated&limit=5` });
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((s: any) => s.id === session_id));
    assert.equal((await call('get', '/api/v1/admin/sessions', {}, { ...operator, query: '?after=nope' })).status, 400);
    assert.equal((await call('get', '/api/v1/admin/sessions/{session_id}', { session_id }, operator)).status, 200);
    assert.equal((await call('get', '/api/v1/admin/sessions/{session_id}', { session_id: newKey('s').slice(-36) }, operator)).status, 404);
    const events = '/api/v1/admin/sessions/{session_id}/events';
    const refused = await call('post', events, { session_id }, { ...operator, ...idem({ events: [{ type: 'agent.session.input.message', input: 'hi' }] }) });
    assert.equal(refused.body.error.code, 'control_event_required');
    const question = waiting.data.waitpoint.questions[0].question_id;
    const resume = { type: 'yuxi.session.input.resume', turn_id: waiting.data.turn_id, waitpoint_id: waiting.data.waitpoint.id, response: { type: 'answer', answers: [{ question_id: question, answer: 'yes' }] } };
    assert.equal((await call('post', events, { session_id }, { ...operator, ...idem({ events: [resume] }) })).status, 202);
    await stream.waitForType('agent.session.turn.completed', waiting.data.turn_id);
    assert.equal((await call('post', events, { session_id }, { ...operator, ...idem({ events: [resume] }) })).status, 409);
    assert.equal((await call('put', '/api/v1/admin/users/{user_id}/role', { user_id }, { body: { role: null } })).status, 200);
    assert.equal((await call('get', '/api/v1/admin/sessions', {}, operator)).status, 403);
  });

  it('the operator routes: a timeline with a tool call and an answered question, the inbox, queues, bulk cancel; their errors', async () => {
    const created = await call('post', SESSIONS, {}, idem({ agent_id: 'default-chatbot', input: '[[tool:calculator {"expression":"6*7"}]]' }));
    assert.equal(created.status, 201);
    const session_id = created.body.id;
    const stream = await subscribe(session_id);
    await stream.waitForType('agent.session.turn.completed');
    assert.equal((await event(session_id, { type: 'agent.session.input.message', input: '[[ask:Which colour?]]' })).status, 202);
    const waiting = (await stream.waitForType('yuxi.session.turn.waiting')).data;
    const inbox = await call('get', '/api/v1/admin/waitpoints', {}, { query: '?status=open&kind=question&limit=100' });
    assert.equal(inbox.status, 200);
    assert.equal((await call('get', '/api/v1/admin/waitpoints', {}, { query: '?kind=cooperation' })).status, 200);
    assert.equal((await call('get', '/api/v1/admin/waitpoints', {}, { query: '?kind=robots' })).body.error.code, 'validation_failed');
    assert.equal((await call('get', '/api/v1/admin/waitpoints', {}, { query: '?after=nope' })).body.error.code, 'invalid_cursor');
    const TIMELINE = '/api/v1/admin/sessions/{session_id}/timeline';
    assert.equal((await call('get', TIMELINE, { session_id })).status, 200, 'a timeline with an open waitpoint');
    const question = waiting.waitpoint.questions[0];
    const answer = { type: 'yuxi.session.input.resume', turn_id: waiting.turn_id, waitpoint_id: waiting.waitpoint.id, response: { type: 'answer', answers: [{ question_id: question.question_id, answer: 'blue' }] } };
    assert.equal((await event(session_id, answer)).status, 202);
    await stream.waitForType('agent.session.turn.completed', waiting.turn_id);
    const timeline = await call('get', TIMELINE, { session_id }, { query: '?order=asc' });
    assert.equal(timeline.status, 200);
    assert.deepEqual([...new Set(timeline.body.data.flatMap((t: any) => t.runs.flatMap((r: any) => r.steps.map((s: any) => s.kind))))].sort(), ['model_call', 'tool_call', 'waitpoint']);
    assert.equal((await call('get', TIMELINE, { session_id: '0193a5c2-0000-7000-8000-000000000000' })).status, 404);
    assert.equal((await call('get', TIMELINE, { session_id }, { query: '?after=nope' })).body.error.code, 'invalid_cursor');
    assert.equal((await call('get', '/api/v1/admin/queues')).status, 200);

    const BULK = '/api/v1/admin/sessions/bulk-cancel';
    assert.equal((await call('post', BULK, {}, { body: { filter: { created_before: 1 }, dry_run: true } })).status, 200);
    assert.equal((await call('post', BULK, {}, { body: { filter: { created_before: 1 }, dry_run: false } })).body.error.code, 'idempotency_key_required');
    assert.equal((await call('post', BULK, {}, idem({ filter: { created_before: 1 }, dry_run: false }))).status, 200);
    assert.equal((await call('post', BULK, {}, { body: { filter: { status: 'idle' }, dry_run: true } })).body.error.code, 'validation_failed');
    assert.equal((await call('post', BULK, {}, { body: { filter: { created_before: 9e12 }, dry_run: true } })).body.error.code, 'validation_failed', 'a time beyond any date is 422, not a 500');
    const key = await http('/api/v1/admin/api-keys', { body: { name: 'operator doc key', access: 'agents' } });
    assert.equal(key.status, 201, key.text);
    assert.equal((await call('get', '/api/v1/admin/queues', {}, { key: key.body.secret })).body.error.code, 'forbidden');
    assert.equal((await call('get', TIMELINE, { session_id }, { key: key.body.secret })).body.error.code, 'forbidden');
    assert.equal((await call('get', '/api/v1/admin/waitpoints', {}, { key: key.body.secret })).body.error.code, 'forbidden');
    assert.equal((await call('post', BULK, {}, { body: { filter: {}, dry_run: true }, key: key.body.secret })).body.error.code, 'forbidden');
  });

  it('a run\'s model requests: an administrator\'s user token reads them; an API key, another role, unknown ids, a foreign cursor, a bad limit', async () => {
    const created = await call('post', SESSIONS, {}, idem({ agent_id: 'default-chatbot', input: '[[tool:calculator {"expression":"2+2"}]]' }));
    assert.equal(created.status, 201);
    const session_id = created.body.id;
    const stream = await subscribe(session_id);
    const done = await stream.waitForType('agent.session.turn.completed');
    stream.close();
    const run_id = (await call('get', `${SESSION}/turns/{turn_id}`, { session_id, turn_id: done.data.turn_id })).body.yuxi.result_run_id;
    const tokenOf = async (role: string | null): Promise<string> => {
      const token = await signToken();
      const me = await http('/api/v1/me', { key: token });
      if (role) assert.equal((await call('put', '/api/v1/admin/users/{user_id}/role', { user_id: me.body.user_id }, { body: { role } })).status, 200);
      return token;
    };
    const admin = { key: await tokenOf('admin') };
    const REQUESTS = '/api/v1/admin/sessions/{session_id}/runs/{run_id}/model-requests';
    const read = await call('get', REQUESTS, { session_id, run_id }, admin);
    assert.equal(read.status, 200);
    assert.equal(read.body.data.length, 2, 'the tool round and the answer');
    assert.equal((await call('get', REQUESTS, { session_id, run_id }, { ...admin, query: `?limit=1&after=${read.body.first_id}&order=asc` })).status, 200);
    assert.equal((await call('get', REQUESTS, { session_id, run_id })).body.error.code, 'user_token_required');
    assert.equal((await call('get', REQUESTS, { session_id, run_id }, { key: await tokenOf('viewer') })).body.error.code, 'forbidden');
    assert.equal((await call('get', REQUESTS, { session_id, run_id: '0193a5c2-0000-7000-8000-000000000000' }, admin)).status, 404);
    assert.equal((await call('get', REQUESTS, { session_id, run_id }, { ...admin, query: '?after=nope' })).body.error.code, 'invalid_cursor');
    assert.equal((await call('get', REQUESTS, { session_id, run_id }, { ...admin, query: '?limit=0' })).body.error.code, 'validation_failed');
  });
});
