import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { chatCompletionBody, type ModelEvent, type ModelMessage, type ModelProvider, type ModelRequest, OpenAiProvider, requestBodyOf, ScriptedProvider } from '#libs/models';
import { toModelRequestDto } from '#libs/operations';
import { startFakeOpenAi, type FakeOpenAi } from '../support/fake-openai.js';

// The model-request audit without a database: the setting, and that what a provider says it sends
// (what the worker records) is what reaches the wire.

const API_KEY = 'sk-audit-0123456789abcdef';
const config = (env: Record<string, string> = {}) => new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', ...env });

function request(messages: ModelMessage[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return { model: 'm', instructions: '', messages, tools: [], signal: new AbortController().signal, ...extra };
}

async function drain(events: AsyncIterable<ModelEvent>): Promise<void> {
  for await (const event of events) void event;
}

describe('MODEL_REQUEST_AUDIT', () => {
  it('is off unless set to on; anything else stops the start', () => {
    assert.equal(config().modelRequestAudit, false);
    assert.equal(config({ MODEL_REQUEST_AUDIT: '' }).modelRequestAudit, false);
    assert.equal(config({ MODEL_REQUEST_AUDIT: 'off' }).modelRequestAudit, false);
    assert.equal(config({ MODEL_REQUEST_AUDIT: 'on' }).modelRequestAudit, true);
    for (const wrong of ['true', 'ON', '1', 'yes']) assert.throws(() => config({ MODEL_REQUEST_AUDIT: wrong }), /MODEL_REQUEST_AUDIT must be off or on/);
  });
});

describe('the request a provider records is the request it sends', () => {
  let fake: FakeOpenAi;
  let provider: OpenAiProvider;

  before(async () => {
    fake = await startFakeOpenAi();
    provider = new OpenAiProvider(config({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: API_KEY }));
  });
  after(() => fake.close());

  it('openai: the Chat Completions body, exactly as the server received it, without the key', async () => {
    const tools = [{ name: 'search', description: 'Search the web', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } }];
    const messages: ModelMessage[] = [
      { role: 'user', text: 'look at this', parts: [{ type: 'text', text: 'look at this' }, { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' }] },
      { role: 'assistant', text: 'Searching.', tool_calls: [{ call_id: 'call_s', name: 'search', arguments: '{"query":"png"}' }] },
      { role: 'tool', call_id: 'call_s', output: 'a picture format' },
    ];
    const sent = request(messages, { model: 'audit-model', instructions: 'Be exact.', tools });
    fake.script('audit-model', [{ text: 'ok' }]);
    await drain(provider.stream(sent));
    const [received] = fake.requests('audit-model');
    const recorded = provider.requestBody(sent);
    // Through JSON, as the row stores it: what the wire carried, field for field.
    assert.deepEqual(JSON.parse(JSON.stringify(recorded)), received);
    assert.deepEqual(Object.keys(recorded).sort(), ['messages', 'model', 'stream', 'stream_options', 'tools']);
    assert.equal(JSON.stringify(recorded).includes(API_KEY), false, 'never the API key');
    assert.deepEqual(recorded, chatCompletionBody(sent), 'one builder for both');
  });

  it('openai: no tools key when the call offers none, as on the wire', async () => {
    const sent = request([{ role: 'user', text: 'hi' }], { model: 'audit-plain' });
    fake.script('audit-plain', [{ text: 'hello' }]);
    await drain(provider.stream(sent));
    assert.deepEqual(JSON.parse(JSON.stringify(provider.requestBody(sent))), fake.requests('audit-plain')[0]);
    assert.equal('tools' in provider.requestBody(sent), false);
  });

  it('scripted: the provider-neutral request it is given, without the abort signal', () => {
    const scripted = new ScriptedProvider(config());
    const tools = [{ name: 'calculator', description: 'Arithmetic', parameters: { type: 'object' } }];
    const messages: ModelMessage[] = [{ role: 'user', text: 'hello [[tool:calculator {"expression":"1+1"}]]' }];
    const sent = request(messages, { model: 'echo', instructions: 'Be kind.', tools });
    assert.deepEqual(scripted.requestBody(sent), { model: 'echo', instructions: 'Be kind.', messages, tools });
    assert.deepEqual(scripted.requestBody({ ...sent, purpose: 'compaction' }), { model: 'echo', instructions: 'Be kind.', messages, tools, purpose: 'compaction' });
  });

  it('a provider without a wire format of its own is recorded as the neutral request', () => {
    const bare: ModelProvider = { provider: 'bare', stream: async function* () {} };
    const sent = request([{ role: 'user', text: 'hi' }], { model: 'x' });
    assert.deepEqual(requestBodyOf(bare, sent), { model: 'x', instructions: '', messages: [{ role: 'user', text: 'hi' }], tools: [] });
    assert.deepEqual(requestBodyOf(provider, sent), provider.requestBody(sent));
  });
});

describe('a recorded request as the API shows it', () => {
  it('names its step, order and model; times in Unix seconds', () => {
    const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true };
    assert.deepEqual(toModelRequestDto({ stepId: 's1', seq: 3, model: 'openai:gpt-4o-mini', request, createdAt: new Date('2024-12-05T12:00:00.900Z') }), {
      object: 'model_request',
      step_id: 's1',
      seq: 3,
      model: 'openai:gpt-4o-mini',
      request,
      created_at: 1733400000,
    });
  });
});
