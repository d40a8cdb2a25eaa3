import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { AppConfig } from '#libs/config';
import {
  classifyProviderError,
  ModelError,
  type ModelEvent,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  OpenAiProvider,
  parseScript,
  retryDelayMs,
  ScriptedProvider,
  streamWithRetries,
} from '#libs/models';
import { startFakeOpenAi, type FakeOpenAi } from '../support/fake-openai.js';

// Model providers without a database: error classification, the retry policy, the scripted model
// and the OpenAI provider against a fake Chat Completions server on the wire.

const API_KEY = 'sk-test-0123456789abcdef';

function request(messages: ModelMessage[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return { model: 'm', instructions: '', messages, tools: [], signal: new AbortController().signal, ...extra };
}

async function collect(events: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

function text(events: ModelEvent[]): string {
  return events.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('');
}

function httpError(status: number, body: object | undefined, headers: Record<string, string> = {}): APIError {
  return APIError.generate(status, body, undefined, new Headers(headers));
}

describe('classifyProviderError', () => {
  it('makes a 429 a retryable rate limit and reads Retry-After in seconds, milliseconds or as a date', () => {
    const limited = classifyProviderError(httpError(429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '2' }));
    assert.equal(limited.code, 'model_rate_limited');
    assert.equal(limited.retryable, true);
    assert.equal(limited.retryAfterMs, 2000);
    assert.equal(classifyProviderError(httpError(429, undefined, { 'retry-after-ms': '1500', 'retry-after': '9' })).retryAfterMs, 1500);
    const now = Date.parse('2030-01-01T00:00:00Z');
    const dated = classifyProviderError(httpError(429, undefined, { 'retry-after': 'Tue, 01 Jan 2030 00:00:05 GMT' }), { now });
    assert.equal(dated.retryAfterMs, 5000);
    assert.equal(classifyProviderError(httpError(429, undefined)).retryAfterMs, null);
  });

  it('recognises a context-length 400 by its code or by its message', () => {
    const byCode = classifyProviderError(httpError(400, { error: { message: 'too long', type: 'invalid_request_error', code: 'context_length_exceeded' } }));
    assert.equal(byCode.code, 'model_context_length_exceeded');
    assert.equal(byCode.retryable, false);
    const vllm = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.";
    assert.equal(classifyProviderError(httpError(400, { error: { message: vllm, code: null } })).code, 'model_context_length_exceeded');
    assert.equal(classifyProviderError(httpError(400, { error: { message: 'messages: missing field', code: null } })).code, 'model_bad_request');
    assert.equal(classifyProviderError(httpError(404, { error: { message: 'model not found' } })).code, 'model_bad_request');
  });

  it('fails auth for good and never repeats the API key', () => {
    const error = classifyProviderError(httpError(401, { error: { message: `Incorrect API key provided: ${API_KEY}.` } }), { secrets: [API_KEY] });
    assert.equal(error.code, 'model_auth_failed');
    assert.equal(error.retryable, false);
    assert.ok(!error.message.includes(API_KEY), error.message);
    assert.ok(!error.message.includes('0123456789abcdef'), 'redacted even without being told the secret');
  });

  it('retries server errors, conflicts and connection failures as model_unavailable', () => {
    for (const status of [409, 500, 502, 503, 529]) {
      const error = classifyProviderError(httpError(status, { error: { message: 'overloaded' } }));
      assert.deepEqual([error.code, error.retryable], ['model_unavailable', true], String(status));
    }
    assert.equal(classifyProviderError(new APIConnectionError({ message: 'Connection error.' })).retryable, true);
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    assert.deepEqual([classifyProviderError(refused).code, classifyProviderError(refused).retryable], ['model_unavailable', true]);
    assert.equal(classifyProviderError({ status: 503, message: 'duck-typed' }).retryable, true);
  });

  it('retries timeouts as model_timeout', () => {
    for (const error of [new APIConnectionTimeoutError(), httpError(408, undefined), httpError(504, undefined)]) {
      const classified = classifyProviderError(error);
      assert.deepEqual([classified.code, classified.retryable], ['model_timeout', true]);
    }
  });

  it('passes a ModelError through and makes anything unknown a final model_unavailable', () => {
    const original = new ModelError('model_bad_request', 'already classified');
    assert.equal(classifyProviderError(original), original);
    const unknown = classifyProviderError(new Error('something odd'));
    assert.deepEqual([unknown.code, unknown.retryable], ['model_unavailable', false]);
    assert.equal(classifyProviderError(new APIUserAbortError()).retryable, false);
  });
});

describe('retryDelayMs', () => {
  it('grows exponentially under full jitter and never exceeds the cap', () => {
    assert.equal(retryDelayMs(0, null, { maxMs: 10_000, random: () => 0.999 }), 499);
    assert.equal(retryDelayMs(2, null, { maxMs: 10_000, random: () => 0.5 }), 1000);
    assert.equal(retryDelayMs(3, null, { maxMs: 10_000, random: () => 0 }), 0);
    assert.equal(retryDelayMs(30, null, { maxMs: 8000, random: () => 0.999999 }), 7999);
    for (const random of [0, 0.25, 0.5, 0.75, 0.999999]) {
      const delay = retryDelayMs(4, null, { baseMs: 100, maxMs: 60_000, random: () => random })!;
      assert.ok(delay >= 0 && delay < 1600, `${delay}`);
    }
  });

  it('waits at least the Retry-After, and gives up when it is longer than allowed', () => {
    assert.equal(retryDelayMs(0, 3000, { maxMs: 10_000, random: () => 0.5 }), 3000);
    assert.equal(retryDelayMs(5, 100, { maxMs: 10_000, random: () => 0.5 }), 5000);
    assert.equal(retryDelayMs(0, 30_000, { maxMs: 10_000, random: () => 0.5 }), null);
  });
});

/** A provider that plays one scripted behaviour per call: a thrown error or events. */
class SequenceProvider implements ModelProvider {
  readonly provider = 'sequence';
  calls = 0;
  constructor(private readonly plays: (ModelError | Error | ModelEvent[] | { events: ModelEvent[]; then: Error })[]) {}

  async *stream(): AsyncIterable<ModelEvent> {
    const play = this.plays[Math.min(this.calls++, this.plays.length - 1)];
    if (play instanceof Error) throw play;
    const events = Array.isArray(play) ? play : (play?.events ?? []);
    for (const event of events) yield event;
    if (play && !Array.isArray(play)) throw play.then;
  }
}

describe('streamWithRetries', () => {
  const limited = () => new ModelError('model_rate_limited', 'slow down', true, 1200);
  const hello: ModelEvent[] = [{ type: 'text_delta', delta: 'hello' }];

  it('retries a retryable failure before anything streamed, then streams the success', async () => {
    const provider = new SequenceProvider([limited(), new ModelError('model_unavailable', 'down', true), hello]);
    const slept: number[] = [];
    const retries: [string, number, number][] = [];
    const events = await collect(
      streamWithRetries(provider, request([]), {
        maxRetries: 3,
        maxDelayMs: 5000,
        random: () => 0.5,
        sleep: async (ms) => void slept.push(ms),
        onRetry: (error, attempt, delayMs) => retries.push([error.code, attempt, delayMs]),
      }),
    );
    assert.deepEqual(events, hello);
    assert.equal(provider.calls, 3);
    assert.deepEqual(slept, [1200, 500]);
    assert.deepEqual(retries, [
      ['model_rate_limited', 0, 1200],
      ['model_unavailable', 1, 500],
    ]);
  });

  it('does not retry once an event has been streamed', async () => {
    const failure = new ModelError('model_unavailable', 'dropped mid-stream', true);
    const provider = new SequenceProvider([{ events: hello, then: failure }, hello]);
    const seen: ModelEvent[] = [];
    await assert.rejects(async () => {
      for await (const event of streamWithRetries(provider, request([]), { maxRetries: 3, maxDelayMs: 5000, sleep: async () => {} })) seen.push(event);
    }, failure);
    assert.deepEqual(seen, hello);
    assert.equal(provider.calls, 1);
  });

  it('rethrows non-retryable errors, foreign errors and the last error once retries run out', async () => {
    const options = { maxRetries: 2, maxDelayMs: 5000, sleep: async () => {} };
    const bad = new ModelError('model_bad_request', 'no');
    const once = new SequenceProvider([bad, hello]);
    await assert.rejects(collect(streamWithRetries(once, request([]), options)), bad);
    assert.equal(once.calls, 1);

    const foreign = new Error('not a ModelError');
    await assert.rejects(collect(streamWithRetries(new SequenceProvider([foreign, hello]), request([]), options)), foreign);

    const last = new ModelError('model_unavailable', 'third', true);
    const exhausted = new SequenceProvider([new ModelError('model_unavailable', 'first', true), new ModelError('model_unavailable', 'second', true), last, hello]);
    await assert.rejects(collect(streamWithRetries(exhausted, request([]), options)), last);
    assert.equal(exhausted.calls, 3);
  });

  it('gives up at once when the Retry-After is longer than the allowed delay', async () => {
    const provider = new SequenceProvider([limited(), hello]);
    await assert.rejects(collect(streamWithRetries(provider, request([]), { maxRetries: 3, maxDelayMs: 1000, sleep: async () => {} })), { code: 'model_rate_limited' });
    assert.equal(provider.calls, 1);
  });

  it('stops waiting when the request is aborted', async () => {
    const controller = new AbortController();
    const provider = new SequenceProvider([new ModelError('model_rate_limited', 'slow down', true, 60_000), hello]);
    const stream = streamWithRetries(provider, request([], { signal: controller.signal }), {
      maxRetries: 3,
      maxDelayMs: 120_000,
      onRetry: () => controller.abort(),
    });
    await assert.rejects(collect(stream), { name: 'AbortError' });
    assert.equal(provider.calls, 1);
  });
});

describe('scripted model', () => {
  const scripted = new ScriptedProvider(new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', SCRIPTED_MAX_WORDS: '50' }));

  it('caps what a user can ask of it ([[words:N]] beyond SCRIPTED_MAX_WORDS)', async () => {
    const events = await collect(scripted.stream({ model: 'echo', instructions: '', messages: [{ role: 'user', text: '[[words:100000]]' }], tools: [], signal: new AbortController().signal }));
    assert.equal(events.filter((e) => e.type === 'text_delta').length, 50);
  });

  it('parses a tool directive whose JSON contains brackets, an ask directive and the old ones', () => {
    const script = parseScript('look [[tool:search {"q": "a]]b", "n": [1, {"x": 2}]}]] up [[ask:Which colour?]] [[delay:5]] [[words:3]]');
    assert.deepEqual(script.steps, [
      { kind: 'tool', name: 'search', arguments: '{"q":"a]]b","n":[1,{"x":2}]}' },
      { kind: 'ask', name: 'ask_user', arguments: '{"question":"Which colour?"}' },
    ]);
    assert.deepEqual(script.text.split(/\s+/), ['look', 'up']);
    assert.equal(script.delayMs, 5);
    assert.equal(script.words, 3);
    assert.deepEqual(parseScript('[[tool:current_time]]').steps, [{ kind: 'tool', name: 'current_time', arguments: '{}' }]);
    assert.equal(parseScript('[[tool:calc {oops}]]').steps[0]?.arguments, '{oops}', 'invalid JSON is passed on as written');
    assert.equal(parseScript('x [[fail:model_timeout]]').fail, 'model_timeout');
    assert.equal(parseScript('[[fail]]').fail, 'model_error');
  });

  it('echoes one word per delta and reports usage counted with the tokenizer', async () => {
    const events = await collect(scripted.stream(request([{ role: 'user', text: 'hello there [[delay:0]]' }], { instructions: 'be brief' })));
    // 'be brief' and the message text (2 + 7 tokens in o200k_base), each with 4 tokens of message overhead.
    assert.deepEqual(
      events.filter((e) => e.type === 'text_delta').map((e) => e.delta),
      ['Echo:', ' hello', ' there'],
    );
    assert.deepEqual(events.slice(-2), [{ type: 'usage', usage: { input_tokens: 17, output_tokens: 3, cached_tokens: 0, total_tokens: 20 } }, { type: 'finish', reason: 'stop' }]);
  });

  it('calls each scripted tool in turn, then answers from the last result', async () => {
    const user: ModelMessage = { role: 'user', text: 'go [[tool:search {"q":"cats"}]] [[ask:Which one?]]' };
    const first = await collect(scripted.stream(request([user])));
    assert.equal(first.length, 3);
    assert.deepEqual(first[2], { type: 'finish', reason: 'tool_calls' });
    const call = first[0]?.type === 'tool_call' ? first[0].call : assert.fail('expected a tool call');
    assert.match(call.call_id, /^call_[0-9a-f]{24}$/);
    assert.deepEqual([call.name, call.arguments], ['search', '{"q":"cats"}']);
    assert.equal(first[1]?.type === 'usage' && first[1].usage.output_tokens, 1);

    const afterSearch: ModelMessage[] = [user, { role: 'assistant', text: '', tool_calls: [call] }, { role: 'tool', call_id: call.call_id, output: '3 cats' }];
    const second = await collect(scripted.stream(request(afterSearch)));
    const ask = second[0]?.type === 'tool_call' ? second[0].call : assert.fail('expected the ask_user call');
    assert.deepEqual([ask.name, JSON.parse(ask.arguments)], ['ask_user', { question: 'Which one?' }]);

    const answered = [...afterSearch, { role: 'assistant', text: '', tool_calls: [ask] }, { role: 'tool', call_id: ask.call_id, output: 'the tabby' }] as ModelMessage[];
    assert.equal(text(await collect(scripted.stream(request(answered)))), 'Answer: the tabby');

    const toolOnly: ModelMessage = { role: 'user', text: '[[tool:search {}]]' };
    const done = await collect(scripted.stream(request([toolOnly, { role: 'assistant', text: '', tool_calls: [call] }, { role: 'tool', call_id: call.call_id, output: '3 cats' }])));
    assert.equal(text(done), 'Tool search returned: 3 cats');
  });

  it('counts only the tool results after the latest user message', async () => {
    const old: ModelMessage[] = [
      { role: 'user', text: 'earlier' },
      { role: 'assistant', text: '', tool_calls: [{ call_id: 'call_1', name: 'x', arguments: '{}' }] },
      { role: 'tool', call_id: 'call_1', output: 'old' },
    ];
    const events = await collect(scripted.stream(request([...old, { role: 'user', text: '[[tool:x]]' }])));
    assert.equal(events[0]?.type, 'tool_call');
  });

  it('fails before anything, retryable only for the transient codes', async () => {
    await assert.rejects(collect(scripted.stream(request([{ role: 'user', text: 'hi [[fail:model_rate_limited]]' }]))), { code: 'model_rate_limited', retryable: true });
    await assert.rejects(collect(scripted.stream(request([{ role: 'user', text: 'hi [[fail:model_auth_failed]] [[tool:x]]' }]))), { code: 'model_auth_failed', retryable: false });
  });
});

describe('OpenAiProvider against a fake server', () => {
  let fake: FakeOpenAi;
  let provider: OpenAiProvider;

  before(async () => {
    fake = await startFakeOpenAi();
    provider = new OpenAiProvider(new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: API_KEY }));
  });
  after(() => fake.close());

  it('streams reasoning and text and sends the conversation in Chat Completions form', async () => {
    fake.script('text-model', [{ text: ['Hel', 'lo', ' world'], reasoning: ['thinking'], usage: { prompt_tokens: 42, completion_tokens: 7, cached: 40 } }]);
    const messages: ModelMessage[] = [
      { role: 'user', text: 'what time is it?' },
      { role: 'assistant', text: '', tool_calls: [{ call_id: 'call_a', name: 'current_time', arguments: '{}' }] },
      { role: 'tool', call_id: 'call_a', output: '12:00' },
    ];
    const events = await collect(provider.stream(request(messages, { model: 'text-model', instructions: 'Be brief.' })));
    assert.deepEqual(events, [
      { type: 'reasoning_delta', delta: 'thinking' },
      { type: 'text_delta', delta: 'Hel' },
      { type: 'text_delta', delta: 'lo' },
      { type: 'text_delta', delta: ' world' },
      { type: 'usage', usage: { input_tokens: 42, output_tokens: 7, cached_tokens: 40, reasoning_tokens: 0, total_tokens: 49 } },
      { type: 'finish', reason: 'stop' },
    ]);
    const [body] = fake.requests('text-model') as any[];
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.equal('tools' in body, false, 'no tools key when there are no tools');
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'what time is it?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'current_time', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: '12:00' },
    ]);
  });

  it('assembles tool calls whose arguments arrive in pieces, in index order, with ids when missing', async () => {
    fake.script('tool-model', [
      {
        text: 'Let me check.',
        tool_calls: [
          { id: 'call_first', name: 'search', arguments: '{"query":"weather in Paris","limit":3}', chunks: 5 },
          { name: 'current_time', arguments: '{}' },
        ],
      },
    ]);
    const tools = [{ name: 'search', description: 'Search the web', parameters: { type: 'object', properties: { query: { type: 'string' } } } }];
    const events = await collect(provider.stream(request([{ role: 'user', text: 'weather?' }], { model: 'tool-model', tools })));
    assert.deepEqual(events[0], { type: 'text_delta', delta: 'Let me check.' });
    const calls = events.flatMap((e) => (e.type === 'tool_call' ? [e.call] : []));
    assert.deepEqual(calls[0], { call_id: 'call_first', name: 'search', arguments: '{"query":"weather in Paris","limit":3}' });
    assert.equal(calls[1]?.name, 'current_time');
    assert.match(calls[1]?.call_id ?? '', /^call_[0-9a-f]{24}$/);
    assert.deepEqual(events.slice(-2), [{ type: 'usage', usage: { input_tokens: 10, output_tokens: 7, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 17 } }, { type: 'finish', reason: 'tool_calls' }]);
    const [body] = fake.requests('tool-model') as any[];
    assert.deepEqual(body.tools, [{ type: 'function', function: tools[0] }]);
  });

  it('classifies a 429 with its Retry-After and a 400 context-length error', async () => {
    fake.script('error-model', [
      { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } } },
      { status: 400, body: { error: { message: "This model's maximum context length is 8192 tokens", type: 'invalid_request_error', code: null } } },
      { status: 400, body: { error: { message: 'Invalid value for messages', type: 'invalid_request_error', code: null } } },
    ]);
    const call = () => collect(provider.stream(request([{ role: 'user', text: 'hi' }], { model: 'error-model' })));
    await assert.rejects(call(), { name: 'ModelError', code: 'model_rate_limited', retryable: true, retryAfterMs: 1000 });
    await assert.rejects(call(), { code: 'model_context_length_exceeded', retryable: false });
    await assert.rejects(call(), (error: ModelError) => error.code === 'model_bad_request' && !error.message.includes(API_KEY));
    assert.equal(fake.requests('error-model').length, 3, 'the client itself never retries');
  });

  it('recovers from a 503 through streamWithRetries', async () => {
    fake.script('flaky-model', [{ status: 503 }, { text: 'back' }]);
    const events = await collect(
      streamWithRetries(provider, request([{ role: 'user', text: 'hi' }], { model: 'flaky-model' }), { maxRetries: 2, maxDelayMs: 1000, sleep: async () => {} }),
    );
    assert.equal(text(events), 'back');
    assert.equal(fake.requests('flaky-model').length, 2);
  });

  it('times out a silent or stalled provider as model_timeout, and leaves an abort untouched', async () => {
    fake.script('silent-model', [{ hang: true }, { text: ['partial', ' answer'], stall: true }, { hang: true }]);
    const impatient = new OpenAiProvider(new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', OPENAI_BASE_URL: fake.url, MODEL_TIMEOUT_MS: '200' }));
    const ask = () => impatient.stream(request([{ role: 'user', text: 'hi' }], { model: 'silent-model' }));
    await assert.rejects(collect(ask()), { code: 'model_timeout', retryable: true });

    const seen: ModelEvent[] = [];
    await assert.rejects(async () => {
      for await (const event of ask()) seen.push(event);
    }, { code: 'model_timeout', retryable: true });
    assert.equal(text(seen), 'partial answer', 'a stream that stalls after its first chunks times out too');

    const controller = new AbortController();
    const pending = collect(provider.stream(request([{ role: 'user', text: 'hi' }], { model: 'silent-model', signal: controller.signal })));
    controller.abort();
    await assert.rejects(pending, (error) => error instanceof APIUserAbortError);
  });

  it('fails an abort mid-stream instead of ending it as if complete', async () => {
    fake.script('cut-model', [{ text: ['first', ' second'], stall: true }]);
    const controller = new AbortController();
    const seen: ModelEvent[] = [];
    await assert.rejects(async () => {
      for await (const event of provider.stream(request([{ role: 'user', text: 'hi' }], { model: 'cut-model', signal: controller.signal }))) {
        seen.push(event);
        controller.abort();
      }
    }, { name: 'AbortError' });
    assert.ok(seen.length >= 1 && seen.every((e) => e.type === 'text_delta'), 'no tool calls or usage after the abort');
  });
});
