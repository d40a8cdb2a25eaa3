import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { env } from '../support/env.js';
import { http, type HttpResult } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { upload } from '../support/files.js';
import { newProductUser, signToken } from '../support/identity.js';
import { renderSentence } from '../support/images.js';

type Method = 'get' | 'post' | 'put' | 'delete';

interface Operation {
  operationId: string;
  parameters?: { name: string; in: 'path' | 'query' | 'header'; required?: boolean; example?: unknown; schema?: { example?: unknown } }[];
  requestBody?: { content: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }> };
}

// What Swagger UI's "Try it out" sends with its defaults — path, query and header parameters from
// their examples (required ones only), the body from the first example — must succeed, on the
// stack as `npm start` leaves it. Only ids no example can know (a session's, a turn's…) come from
// the resources the earlier calls created, as a person would paste them.
describe('Swagger "Try it out" succeeds with the defaults of the document', () => {
  let operations: Map<string, { method: Method; path: string; operation: Operation }>;
  const tried = new Set<string>();
  const ids: Record<string, string> = {};
  const streams: SseStream[] = [];

  before(async () => {
    const doc = (await http('/openapi.json', { key: null })).body;
    operations = new Map();
    for (const [path, item] of Object.entries(doc.paths) as [string, Record<Method, Operation>][]) {
      for (const [method, operation] of Object.entries(item) as [Method, Operation][]) operations.set(operation.operationId, { method, path, operation });
    }
  });
  after(() => streams.forEach((s) => s.close()));

  /** The request Try it out builds for `operationId`. */
  function request(operationId: string, edit?: (example: any) => unknown): { method: Method; url: string; headers: Record<string, string>; body?: string } {
    const found = operations.get(operationId);
    assert.ok(found, `${operationId} is documented`);
    const { method, path, operation } = found;
    const headers: Record<string, string> = {};
    const query = new URLSearchParams();
    let url = path;
    for (const parameter of operation.parameters ?? []) {
      const example = parameter.example ?? parameter.schema?.example;
      if (parameter.in === 'path') {
        const value = example ?? ids[parameter.name];
        assert.ok(value !== undefined, `${operationId}: a value for path parameter ${parameter.name}`);
        url = url.replace(`{${parameter.name}}`, encodeURIComponent(String(value)));
      } else if (parameter.required) {
        assert.ok(example !== undefined, `${operationId}: the required ${parameter.in} parameter ${parameter.name} has an example`);
        if (parameter.in === 'query') query.set(parameter.name, String(example));
        else headers[parameter.name] = String(example);
      }
    }
    let body: string | undefined;
    const json = operation.requestBody?.content['application/json'];
    if (json) {
      const value = json.examples ? Object.values(json.examples)[0]?.value : json.example;
      assert.ok(value !== undefined, `${operationId}: the request body has an example`);
      // An id in the body that no example can know, pasted in by the person trying it.
      body = JSON.stringify(edit ? edit(value) : value);
      headers['content-type'] = 'application/json';
    }
    return { method, url: query.size > 0 ? `${url}?${query}` : url, headers, body };
  }

  /** `as.key`: the credential put in Authorize (default the suite's API key); `as.edit`: the body's example as the person edits it. */
  async function tryIt(operationId: string, status: number, as: { key?: string; edit?: (example: any) => unknown } = {}): Promise<HttpResult> {
    const { method, url, headers, body } = request(operationId, as.edit);
    const res = await http(url, { method: method.toUpperCase(), headers, rawBody: body, key: as.key });
    assert.equal(res.status, status, `${operationId} (${method.toUpperCase()} ${url}): ${res.text.slice(0, 500)}`);
    tried.add(operationId);
    return res;
  }

  async function turnCompleted(sessionId: string, count: number): Promise<string> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    await stream.waitFor(() => stream.events.filter((e) => e.type === 'agent.session.turn.completed').length >= count);
    stream.close();
    return stream.events.filter((e) => e.type === 'agent.session.turn.completed').at(-1)!.data.turn_id;
  }

  it('operations and agents', async () => {
    for (const id of ['getHealth', 'getLiveness', 'getReadiness', 'getMetrics', 'listAgents', 'getAgent']) await tryIt(id, 200);
  });

  it('a session from its default create, read every way, a message, its receipt, then archived and deleted', async () => {
    const created = await tryIt('createSession', 201);
    ids.session_id = created.body.id;
    ids.input_id = created.body.yuxi.receipt.input_id;
    ids.turn_id = await turnCompleted(ids.session_id, 1);
    ids.run_id = (await http(`/api/v1/agents/sessions/${ids.session_id}/turns/${ids.turn_id}`)).body.yuxi.result_run_id;
    for (const id of ['getSession', 'listSessions', 'updateSession', 'getState', 'getQueue', 'getInput', 'listTurns', 'getTurn', 'listTurnItems', 'listSessionItems', 'getRun', 'listSessionTraces', 'getSessionStorage']) {
      await tryIt(id, 200);
    }
    await tryIt('submitEvent', 202);
    await tryIt('getReceipt', 200);
    await turnCompleted(ids.session_id, 2);

    const { url, headers } = request('streamSessionEvents');
    const stream = await SseStream.request(url, { headers: { ...headers, authorization: `Bearer ${env.apiKey}` } });
    streams.push(stream);
    assert.equal(stream.status, 200);
    await stream.waitForType('agent.session.created');
    stream.close();
    tried.add('streamSessionEvents');
    await tryIt('forkSession', 201);
    await tryIt('archiveSession', 200);
    await tryIt('deleteSession', 200);
  });

  it('a project created from the default body, read, listed and deleted', async () => {
    ids.project_id = (await tryIt('createProject', 201)).body.id;
    await tryIt('getProject', 200);
    assert.equal((await tryIt('getProjectStorage', 200)).body.object, 'yuxi.project.storage');
    await tryIt('listProjects', 200);
    await tryIt('deleteProject', 200);
  });

  it('the admin routes: an agent put, its versions listed, and deleted, a key created, listed and revoked, a secret put, rotated, listed and deleted, the audit trail, the users', async () => {
    await tryIt('adminListAgents', 200);
    await tryIt('putAgent', 201);
    const versions = await tryIt('listAgentVersions', 200);
    assert.deepEqual(versions.body.data.map((v: any) => v.version), [1], 'the version the put made');
    await tryIt('deleteAgent', 200);
    ids.key_id = (await tryIt('createApiKey', 201)).body.id;
    await tryIt('listApiKeys', 200);
    await tryIt('revokeApiKey', 200);
    await tryIt('putSecret', 201);
    await tryIt('putSecret', 200);
    await tryIt('listSecrets', 200);
    await tryIt('deleteSecret', 200);
    await tryIt('listAuditEntries', 200);
    await tryIt('listUsers', 200);
    await tryIt('getCaller', 200);
    await tryIt('getConsoleSettings', 200);
  });

  it('the operator API: a role granted, every owner\'s sessions searched and read, a control event sent', async () => {
    const user = await http('/api/v1/admin/api-keys', { body: { name: 'try operator', access: 'full', user_subject: `try-${Date.now()}` } });
    assert.equal(user.status, 201, user.text);
    ids.user_id = user.body.user_id;
    await tryIt('setUserRole', 200);
    await tryIt('suspendUser', 200);
    await tryIt('reactivateUser', 200);
    // Some owner's session (the default create's key already made one, since deleted).
    const created = await http('/api/v1/agents/sessions', { headers: { 'idempotency-key': `try-ops-${Date.now()}` }, body: { agent_id: 'default-chatbot', input: 'Hello!' } });
    assert.equal(created.status, 201, created.text);
    ids.session_id = created.body.id;
    await turnCompleted(ids.session_id, 1);
    await tryIt('listAdminSessions', 200);
    await tryIt('listStorageTotals', 200);
    await tryIt('getAdminSession', 200);
    await tryIt('submitAdminSessionEvent', 202);
  });

  it('the operator routes: a session\'s timeline (its id pasted in), the inbox, the queues, a bulk cancel\'s dry run', async () => {
    const created = await http('/api/v1/agents/sessions', { method: 'POST', headers: { 'idempotency-key': `try-timeline-${Date.now()}` }, body: { agent_id: 'default-chatbot', input: 'hello' } });
    assert.equal(created.status, 201, created.text);
    ids.session_id = created.body.id;
    await turnCompleted(ids.session_id, 1);
    const timeline = await tryIt('getSessionTimeline', 200);
    assert.equal(timeline.body.data.length, 1);
    // A run's model requests: its id pasted in from the timeline, authorized with an administrator's user token.
    ids.run_id = timeline.body.data[0].runs[0].id;
    const subject = `try-admin-${Date.now()}`;
    const token = await signToken({ subject });
    const me = await http('/api/v1/me', { key: token });
    assert.equal(me.status, 200, me.text);
    assert.equal((await http(`/api/v1/admin/users/${me.body.user_id}/role`, { method: 'PUT', body: { role: 'admin' } })).status, 200);
    const requests = await tryIt('listModelRequests', 200, { key: token });
    assert.equal(requests.body.data.length, 1, 'the stack records model requests: the turn\'s one call');
    await tryIt('listOpenWaitpoints', 200);
    await tryIt('getQueueStatus', 200);
    const dry = await tryIt('bulkCancelSessions', 200);
    assert.equal(dry.body.dry_run, true, 'the first example is the dry run');
  });

  it('files: an upload (a file picked, as Try it out asks for), read and deleted; one attached to a session, listed, read back and deleted', async () => {
    // Try it out has no default file: a person picks one, so the upload is the one multipart request built here.
    const picked = await upload('quarterly numbers\n', 'notes.txt');
    assert.equal(picked.status, 201, picked.text);
    tried.add('uploadFile');
    ids.file_id = picked.body.id;
    await tryIt('getFile', 200);
    await tryIt('deleteFile', 200);

    const attached = (await upload('attached notes\n', 'attached.txt')).body;
    const session = await http('/api/v1/agents/sessions', {
      method: 'POST',
      headers: { 'idempotency-key': `try-files-${attached.id}` },
      body: { agent_id: 'default-chatbot', input: 'Read this', yuxi: { attachment_file_ids: [attached.id] } },
    });
    assert.equal(session.status, 201, session.text);
    ids.session_id = session.body.id;
    ids.file_id = attached.id;
    await turnCompleted(ids.session_id, 1);
    await tryIt('listAttachments', 200);
    const content = await tryIt('getSessionFileContent', 200);
    assert.equal(content.text, 'attached notes\n');
    await tryIt('deleteAttachment', 200);
  });

  it('the product\'s private file routes, authorized with a user token: a draft image pre-parsed and thumbnailed', async () => {
    const token = await signToken();
    const picked = await upload(await renderSentence('Try it out'), 'picked.png', { token });
    assert.equal(picked.status, 201, picked.text);
    ids.file_id = picked.body.id;
    const parsed = await tryIt('parseDraftFile', 200, { key: token });
    assert.equal(parsed.body.pages[0].source, 'ocr');
    await tryIt('createImageThumbnail', 200, { key: token, edit: (example) => ({ ...example, file_id: picked.body.id }) });
  });

  it('webhooks: an endpoint created from the default body, read, listed, updated, tested, its deliveries listed, one redelivered, its secret rotated, deleted', async () => {
    // Authorized as a user of its own: the suite's sessions (the bootstrap key's) are announced to no endpoint.
    const { key } = await newProductUser('try webhooks');
    const as = { key: key.secret };
    ids.webhook_id = (await tryIt('createWebhookEndpoint', 201, as)).body.id;
    await tryIt('getWebhookEndpoint', 200, as);
    await tryIt('listWebhookEndpoints', 200, as);
    await tryIt('updateWebhookEndpoint', 200, as);
    ids.delivery_id = (await tryIt('testWebhookEndpoint', 202, as)).body.id;
    await tryIt('listWebhookDeliveries', 200, as);
    await tryIt('redeliverWebhook', 202, as);
    await tryIt('rotateWebhookSecret', 200, as);
    await tryIt('deleteWebhookEndpoint', 200, as);
  });

  it('artifacts: a file an agent wrote in its workspace, listed, read, downloaded and deleted (the session id pasted in)', async () => {
    const write = `[[tool:write_file ${JSON.stringify({ path: 'report.md', content: 'try it out\n' })}]]`;
    const created = await http('/api/v1/agents/sessions', { headers: { 'idempotency-key': `try-artifacts-${Date.now()}` }, body: { agent_id: 'default-chatbot', environment: { type: 'openai_hosted' }, input: write } });
    assert.equal(created.status, 201, created.text);
    ids.session_id = created.body.id;
    await turnCompleted(ids.session_id, 1);
    const listed = await tryIt('listArtifacts', 200);
    assert.deepEqual(listed.body.data.map((a: any) => a.path), ['/workspace/report.md']);
    ids.artifact_id = listed.body.data[0].id;
    await tryIt('getArtifact', 200);
    assert.equal((await tryIt('getArtifactContent', 200)).text, 'try it out\n');
    await tryIt('deleteArtifact', 200);
  });

  it('usage reports: the caller\'s and every owner\'s, with the default parameters', async () => {
    for (const id of ['getUsage', 'getAdminUsage']) await tryIt(id, 200);
  });

  it('budgets: one created for a project (its id pasted in), read, listed, raised and deleted; the usage and lifecycle clocks moved and put back', async () => {
    const project = await http('/api/v1/agents/projects', { body: { name: 'try budgets' } });
    assert.equal(project.status, 201, project.text);
    ids.budget_id = (await tryIt('createBudget', 201, { edit: (example) => ({ ...example, scope: { project_id: project.body.id } }) })).body.id;
    await tryIt('getBudget', 200);
    await tryIt('listBudgets', 200);
    await tryIt('updateBudget', 200);
    await tryIt('deleteBudget', 200);
    // The test stack lets the clock move (USAGE_CLOCK_ADJUSTABLE): the default moves it a day, the next call puts it back.
    assert.equal((await tryIt('setUsageClock', 200)).body.offset_s, 86400);
    assert.equal((await tryIt('setUsageClock', 200, { edit: () => ({ offset_s: 0 }) })).body.offset_s, 0);
    assert.equal((await tryIt('setLifecycleClock', 200)).body.offset_s, 3600);
    assert.equal((await tryIt('setLifecycleClock', 200, { edit: () => ({ offset_s: 0 }) })).body.offset_s, 0);
  });

  it('automations: one created from the default body, read, listed, updated, paused, resumed, run now, its invocations listed and read, a schedule previewed, deleted', async () => {
    ids.automation_id = (await tryIt('createAutomation', 201)).body.id;
    await tryIt('getAutomation', 200);
    await tryIt('listAutomations', 200);
    await tryIt('updateAutomation', 200);
    await tryIt('pauseAutomation', 200);
    await tryIt('resumeAutomation', 200);
    ids.invocation_id = (await tryIt('createAutomationInvocation', 201)).body.id;
    await tryIt('listAutomationInvocations', 200);
    await tryIt('getAutomationInvocation', 200);
    await tryIt('previewAutomationSchedule', 200);
    await tryIt('deleteAutomation', 200);
  });

  it('model prices: one put from the default body, listed, and deleted', async () => {
    await tryIt('putModelPrice', 201);
    await tryIt('listModelPrices', 200);
    await tryIt('deleteModelPrice', 200);
  });

  it('tried every operation of the document', () => {
    assert.deepEqual([...operations.keys()].filter((id) => !tried.has(id)), []);
  });
});
