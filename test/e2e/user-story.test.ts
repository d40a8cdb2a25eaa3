import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ERROR_CODES } from '#libs/errors';
import { EVENT_TYPES } from '#libs/events';
import { API, createSession, http, newKey, sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';

describe('user story: one input travels HTTP → Postgres → BullMQ → worker → Redis → SSE', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  it('lists the default agent', async () => {
    const res = await http(`${API}`);
    assert.equal(res.status, 200);
    const agent = res.body.data.find((a: any) => a.id === 'default-chatbot');
    assert.equal(agent.model, 'scripted:echo');
    assert.equal(agent.object, 'agent');
    const detail = await http(`${API}/default-chatbot`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.id, 'default-chatbot');
  });

  it('creates a session with input, streams the turn, and keeps the durable result', async () => {
    const created = await http(`${API}/sessions`, {
      body: { agent_id: 'default-chatbot', input: 'hello there' },
      idempotencyKey: newKey(),
    });
    assert.equal(created.status, 201);
    assert.match(created.headers.get('x-request-id') ?? '', /\S/);
    const session = created.body;
    assert.equal(session.object, 'agent.session');
    assert.deepEqual(session.agent, { id: 'default-chatbot', model: 'scripted:echo' });
    assert.equal(session.yuxi.receipt.object, 'yuxi.session.event.accepted');
    assert.equal(session.yuxi.receipt.status, 'accepted');
    assert.equal(session.yuxi.receipt.turn_id, null);
    assert.equal(session.yuxi.receipt.run_id, null);
    assert.equal(typeof session.created_at, 'number');

    const stream = await SseStream.open(session.id);
    streams.push(stream);
    assert.equal(stream.status, 200);
    assert.match(stream.contentType, /text\/event-stream/);
    const createdEvent = await stream.waitForType('agent.session.turn.created');
    const turnId = createdEvent.data.turn_id;
    const completed = await stream.waitForType('agent.session.turn.completed', turnId);
    assert.equal(completed.data.turn.status, 'completed');

    const turnEvents = stream.events.filter((e) => e.data.turn_id === turnId);
    const deltas = turnEvents.filter((e) => e.type === 'agent.session.turn.output_text.delta').map((e) => e.data.delta);
    assert.deepEqual(deltas, ['Echo:', ' hello', ' there']);
    const itemDone = turnEvents.find((e) => e.type === 'agent.session.turn.item.done' && e.data.item.role === 'assistant');
    assert.ok(itemDone, 'assistant item.done was streamed');
    assert.equal(itemDone.data.item.content[0].text, 'Echo: hello there');
    const order = turnEvents.map((e) => e.type);
    assert.ok(order.indexOf('agent.session.turn.created') < order.indexOf('agent.session.turn.output_text.delta'));
    assert.ok(order.indexOf('agent.session.turn.item.done') < order.indexOf('agent.session.turn.completed'));
    for (const event of stream.events) {
      assert.equal(event.type, event.data.type, 'SSE event: equals data.type');
      assert.match(event.data.event_id, /^evt_/);
      assert.equal(event.data.session_id, session.id);
    }

    const turns = await http(`${API}/sessions/${session.id}/turns`);
    assert.equal(turns.status, 200);
    assert.equal(turns.body.object, 'list');
    assert.deepEqual(turns.body.data.map((t: any) => t.id), [turnId]);

    const turn = await http(`${API}/sessions/${session.id}/turns/${turnId}`);
    assert.equal(turn.status, 200);
    assert.equal(turn.body.object, 'agent.session.turn');
    assert.equal(turn.body.status, 'completed');
    assert.equal(turn.body.yuxi.runs.length, 1);
    assert.equal(turn.body.yuxi.result_run_id, turn.body.yuxi.runs[0].id);
    assert.equal(turn.body.yuxi.output[0].content[0].text, 'Echo: hello there');
    assert.equal(turn.body.yuxi.output[0].phase, 'final_answer');

    const turnItems = await http(`${API}/sessions/${session.id}/turns/${turnId}/items?order=asc`);
    assert.equal(turnItems.status, 200);
    assert.deepEqual(
      turnItems.body.data.map((i: any) => [i.role, i.content[0].text]),
      [
        ['user', 'hello there'],
        ['assistant', 'Echo: hello there'],
      ],
    );
    assert.deepEqual(turnItems.body.yuxi.runs.map((r: any) => r.id), [turn.body.yuxi.result_run_id]);

    const items = await http(`${API}/sessions/${session.id}/items`);
    assert.equal(items.status, 200);
    assert.deepEqual(items.body.data.map((i: any) => i.role), ['assistant', 'user'], 'default order is desc');

    const run = await http(`${API}/sessions/${session.id}/runs/${turn.body.yuxi.result_run_id}`);
    assert.equal(run.status, 200);
    assert.equal(run.body.status, 'completed');
    assert.deepEqual(run.body.input_ids, [session.yuxi.receipt.input_id]);

    const read = await http(`${API}/sessions/${session.id}`);
    assert.equal(read.body.status, 'completed');
    assert.equal(read.body.yuxi.receipt, null);
    assert.equal(read.body.yuxi.current_turn.id, turnId);
  });

  it('accepts follow-ups with 202 receipts and runs each as its own turn, in order', async () => {
    const session = await createSession();
    assert.equal(session.status, 'idle');
    assert.equal(session.yuxi.receipt, null);
    const stream = await SseStream.open(session.id);
    streams.push(stream);

    const receipts = [];
    for (const text of ['first [[delay:20]]', 'second', 'third']) {
      const res = await sendMessage(session.id, text);
      assert.equal(res.status, 202);
      assert.equal(res.body.object, 'yuxi.session.event.accepted');
      assert.equal(res.body.session_id, session.id);
      assert.equal(res.body.turn_id, null);
      receipts.push(res.body);
    }
    const completions = [];
    while (completions.length < 3) {
      const seen = new Set(completions.map((e) => e.data.turn_id));
      completions.push(await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && !seen.has(e.data.turn_id)));
    }
    const turns = await http(`${API}/sessions/${session.id}/turns?order=asc`);
    assert.equal(turns.body.data.length, 3);
    const outputs = [];
    for (const turn of turns.body.data) {
      const detail = await http(`${API}/sessions/${session.id}/turns/${turn.id}`);
      outputs.push(detail.body.yuxi.output[0].content[0].text);
      assert.deepEqual(detail.body.yuxi.runs[0].input_ids, [receipts[outputs.length - 1].input_id]);
    }
    assert.deepEqual(outputs, ['Echo: first', 'Echo: second', 'Echo: third']);
  });

  it('serves Swagger UI and an OpenAPI document of the main endpoints, every error code of the catalogue and every event type', async () => {
    const docs = await http('/docs', { key: null });
    assert.equal(docs.status, 200);
    assert.match(docs.text, /swagger/i);
    const spec = await http('/openapi.json', { key: null });
    assert.equal(spec.status, 200);
    const paths = Object.keys(spec.body.paths);
    for (const path of [
      '/api/v1/agents',
      '/api/v1/agents/{agent_id}',
      '/api/v1/agents/sessions',
      '/api/v1/agents/sessions/{session_id}',
      '/api/v1/agents/sessions/{session_id}/events',
      '/api/v1/agents/sessions/{session_id}/receipt',
      '/api/v1/agents/sessions/{session_id}/turns',
      '/api/v1/agents/sessions/{session_id}/turns/{turn_id}',
      '/api/v1/agents/sessions/{session_id}/turns/{turn_id}/items',
      '/api/v1/agents/sessions/{session_id}/items',
      '/api/v1/agents/sessions/{session_id}/runs/{run_id}',
      '/api/v1/agents/sessions/{session_id}/archive',
      '/api/v1/agents/sessions/{session_id}/queue',
      '/api/v1/agents/sessions/{session_id}/inputs/{input_id}',
      '/api/v1/agents/sessions/{session_id}/state',
      '/api/v1/admin/agents',
      '/api/v1/admin/agents/{agent_id}',
      '/api/v1/admin/api-keys',
      '/api/v1/admin/api-keys/{key_id}',
      '/api/v1/admin/audit',
      '/health/live',
      '/health/ready',
      '/metrics',
    ]) {
      assert.ok(paths.includes(path), `${path} is documented`);
    }
    // What every operation can answer: X-Request-Id on every response; 429 with Retry-After and 503 under /api; 415 with a JSON body.
    for (const [path, item] of Object.entries(spec.body.paths) as [string, Record<string, any>][]) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses) as [string, any][]) {
          assert.ok(response.headers?.['X-Request-Id'], `${method} ${path} ${status} declares X-Request-Id`);
        }
        if (path.startsWith('/api/')) {
          assert.ok(operation.responses['429']?.headers?.['Retry-After'], `${method} ${path} declares 429 with Retry-After`);
          assert.ok(operation.responses['503'], `${method} ${path} declares 503`);
        }
        if (operation.requestBody) assert.ok(operation.responses['415'], `${method} ${path} declares 415`);
        for (const [status, response] of Object.entries(operation.responses) as [string, any][]) {
          if (Number(status) >= 400) assert.deepEqual(Object.keys(response.content ?? {}), ['application/json'], `${method} ${path} ${status} is JSON`);
        }
      }
    }
    const create = spec.body.paths['/api/v1/agents/sessions'].post;
    assert.ok(create.responses['201'].content['text/event-stream'], 'stream: true answers an event stream');
    assert.ok(!JSON.stringify(create.requestBody.content['application/json'].examples ?? {}).includes('"stream"'), 'the sample body does not ask for a stream');
    const header = create.parameters.find((p: any) => p.name === 'Idempotency-Key');
    assert.deepEqual([header.schema.minLength, header.schema.maxLength], [1, 128]);
    const list = spec.body.paths['/api/v1/agents/sessions'].get.parameters;
    assert.equal(list.find((p: any) => p.name === 'limit').schema.type, 'integer');
    assert.equal(list.find((p: any) => p.name === 'after').schema.minLength, 1);
    assert.equal(spec.body.components.schemas.CreateSessionDto.properties.agent_id.minLength, 1);
    const schemas = spec.body.components.schemas;
    // The whole catalogue, neither more nor less: a code or event type added without its documentation shows here.
    assert.deepEqual([...schemas.ErrorCode.enum].sort(), Object.keys(ERROR_CODES).sort(), 'ErrorCode documents every code of libs/errors');
    assert.ok(spec.body.paths['/api/v1/agents/sessions/{session_id}'].post, 'session update is documented');
    assert.deepEqual(Object.keys(schemas.SessionEvent.discriminator.mapping).sort(), Object.keys(EVENT_TYPES).sort(), 'SessionEvent maps every event type of libs/events');
    for (const dto of [
      'SessionDto',
      'CreateSessionDto',
      'UpdateSessionDto',
      'SubmitEventsDto',
      'MessageEventDto',
      'CancelTurnEventDto',
      'CancelInputEventDto',
      'PromoteInputEventDto',
      'ContinueQueueEventDto',
      'TurnDetailDto',
      'ItemListDto',
      'QueueDto',
      'InputDetailDto',
      'SessionStateDto',
      'ErrorResponseDto',
    ]) {
      assert.ok(schemas[dto], `${dto} is documented`);
    }
  });
});
