import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentDefinition } from '#libs/agents';
import { AppConfig } from '#libs/config';
import { defaultWindowTokens, ModelError, ScriptedProvider, SCRIPTED_WINDOW_TOKENS, type ModelEvent } from '#libs/models';
import { compactionCut, ContextCache, type ContextMeasure, contextPolicy, contextTokens, decideContext, planNextStep, type ToolPolicy, transcript } from '#libs/runtime';
import type { CommittedStep, ItemEntity } from '#libs/engine';

// Context management's decisions, pure: no database, no model.
const measure = (items: number[], extra: Partial<ContextMeasure> = {}): ContextMeasure => ({
  baseTokens: 100,
  summaryTokens: 0,
  pinnedTokens: 0,
  latestUserTokens: items.at(-1) ?? 0,
  itemTokens: items,
  driftTokens: 0,
  lastCompactionTokensAfter: null,
  ...extra,
});
const policy = (overrides: Parameters<typeof contextPolicy>[1] = {}, mode?: 'auto' | 'manual' | 'off') => contextPolicy('scripted:echo', { window_tokens: 2000, ...overrides }, mode);

describe('context policy', () => {
  it('fills in defaults: the model\'s window, auto at 0.8, a quarter kept, the agent\'s model as summariser; the session overrides the mode', () => {
    const p = contextPolicy('openai:gpt-4o-mini', undefined, undefined);
    assert.equal(p.windowTokens, 128_000);
    assert.equal(p.mode, 'auto');
    assert.equal(p.thresholdTokens, 102_400);
    assert.equal(p.keepRecentTokens, 32_000);
    assert.equal(p.summarizerModel, 'openai:gpt-4o-mini');
    assert.equal(contextPolicy('scripted:echo', { compaction: { mode: 'manual' } }, 'off').mode, 'off');
    assert.equal(defaultWindowTokens('scripted:anything'), SCRIPTED_WINDOW_TOKENS);
    assert.equal(defaultWindowTokens('openai:gpt-4.1-mini'), 1_047_576);
    assert.equal(defaultWindowTokens('openai:my-local-llama'), 128_000);
  });

  it('calls below the threshold, compacts above it, and fails what cannot fit', () => {
    const p = policy();
    assert.deepEqual(decideContext(measure([500, 500]), p, 500), { action: 'call' });
    assert.deepEqual(decideContext(measure([700, 750, 100]), p, 1450), { action: 'compact' });
    // Over the threshold but nothing worth summarising: the call still fits, so it is made.
    assert.deepEqual(decideContext(measure([10, 10, 1500]), p, 20), { action: 'call' });
    // The latest message alone does not fit: no compaction can help.
    const huge = decideContext(measure([10, 2500]), p, 10);
    assert.equal(huge.action, 'too_large');
  });

  it('waits for the context to grow by the minimum gain after a compaction (no loop), and never compacts when off or manual', () => {
    const p = policy();
    const compactedAt = measure([900, 800], { lastCompactionTokensAfter: 1790 });
    assert.deepEqual(decideContext(compactedAt, p, 900), { action: 'call' }, 'just compacted to this size: no second compaction');
    assert.deepEqual(decideContext(measure([900, 800, 200], { lastCompactionTokensAfter: 1790 }), p, 900), { action: 'compact' });
    for (const mode of ['off', 'manual'] as const) {
      assert.deepEqual(decideContext(measure([700, 700, 100]), policy({}, mode), 1400), { action: 'call' }, `${mode}: under the window it is sent`);
      const over = decideContext(measure([1000, 1000, 100]), policy({}, mode), 2000);
      assert.equal(over.action, 'too_large');
      assert.match(over.action === 'too_large' ? over.message : '', new RegExp(`compaction is ${mode}`));
    }
  });

  it('counts the provider\'s drift in the context size', () => {
    assert.equal(contextTokens(measure([10, 20], { summaryTokens: 5, pinnedTokens: 7, driftTokens: 3 })), 100 + 5 + 7 + 30 + 3);
  });

  it('cuts so that the latest items within keep_recent stay, never between a call and its output', () => {
    const items = [
      { type: 'message', tokens: 100 },
      { type: 'message', tokens: 100 },
      { type: 'function_call', tokens: 50, callId: 'c1' },
      { type: 'function_call_output', tokens: 50, callId: 'c1' },
      { type: 'message', tokens: 100 },
    ];
    assert.equal(compactionCut(items, 250), 2, 'the call, its output and the last message are kept');
    // 180 would keep only the output and the message: the cut moves past the output instead.
    assert.equal(compactionCut(items, 180), 4);
    assert.equal(compactionCut(items, 0), 5, 'nothing kept');
    assert.equal(compactionCut(items, 10_000), 0, 'everything fits: nothing to summarise');
  });
});

describe('compaction transcript', () => {
  const item = (type: string, role: string | null, content: ItemEntity['content']) => ({ type, role, content });
  it('opens with the previous summary and renders each item on its line', () => {
    const text = transcript(
      'Facts:\n- user: order 4711',
      [
        item('message', 'user', [{ type: 'input_text', text: 'where is it?' }, { type: 'input_image', image_url: 'x' }]),
        item('function_call', null, [{ type: 'function_call', call_id: 'c1', name: 'track', arguments: '{"id":4711}' }]),
        item('function_call_output', null, [{ type: 'function_call_output', call_id: 'c1', output: 'in transit', success: true }]),
      ],
      10_000,
    );
    assert.equal(text, 'Previous summary:\nFacts:\n- user: order 4711\n\nConversation since:\n[user] where is it? [1 image]\n[tool call] track({"id":4711})\n[tool result] in transit');
  });

  it('keeps the head and tail of long lines when the transcript is over its budget', () => {
    const long = `${'a'.repeat(5000)}ZZZ`;
    const text = transcript(null, [item('message', 'user', [{ type: 'input_text', text: `START ${long}` }])], 1000);
    assert.ok(text.length < 1100);
    assert.match(text, /^Conversation:\n\[user\] START a+ \[…\] a+ZZZ$/);
  });
});

describe('compaction transcript files', () => {
  it('names the files attached to a user message, and the scripted summary keeps them as a fact', async () => {
    const files = new Map([['m1', [{ id: 'f'.repeat(32), filename: 'invoice.pdf', mimeType: 'application/pdf', bytes: 1200 }]]]);
    const text = transcript(null, [{ id: 'm1', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'see the invoice' }] }], 10_000, files);
    assert.equal(text, `Conversation:\n[user] see the invoice [Attached files: invoice.pdf (file_id ${'f'.repeat(32)}, application/pdf, 1200 bytes)]`);
    const scripted = new ScriptedProvider(new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x' }));
    const events: ModelEvent[] = [];
    for await (const event of scripted.stream({ model: 'x', instructions: '', messages: [{ role: 'user', text }], tools: [], signal: new AbortController().signal, purpose: 'compaction' })) events.push(event);
    const summary = events.find((e) => e.type === 'text_delta');
    assert.match(summary?.type === 'text_delta' ? summary.delta : '', /- files: invoice\.pdf \(file_id f{32}/);
  });
});

describe('compaction transcript bounds', () => {
  it('drops the middle of a history of many short items, keeping the oldest and the latest', () => {
    const items = Array.from({ length: 3000 }, (_, i) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text: `short message number ${i}` }] }));
    const text = transcript(null, items, 2000);
    assert.ok(text.length <= 2000, `bounded: ${text.length}`);
    assert.match(text, /\[user\] short message number 0\n/);
    assert.match(text, /\[user\] short message number 2999$/);
    assert.match(text, /\[… \d+ items omitted …\]/);
  });
});

describe('compaction turn plan', () => {
  const none: ToolPolicy = { executorOf: () => null, needsApproval: () => false, idempotent: () => true, checkArguments: () => ({ ok: true, value: {} }) };
  const compaction: CommittedStep = { runId: 'r1', kind: 'compaction', status: 'completed', ref: 'i1', output: { item_id: 'i1' } };
  it('compacts, then finishes without an answer; a message turn ignores compaction steps', () => {
    assert.deepEqual(planNextStep([], none, undefined, 'compaction'), { action: 'compact' });
    assert.deepEqual(planNextStep([compaction], none, undefined, 'compaction'), { action: 'finish' });
    assert.deepEqual(planNextStep([compaction], none, undefined, 'message'), { action: 'call_model' });
  });
});

describe('agent context definition', () => {
  it('accepts a full policy and keeps only what was given', () => {
    const { definition, errors } = parseAgentDefinition({ name: 'a', context: { window_tokens: 4096, compaction: { mode: 'manual', threshold: 0.7, keep_recent_tokens: 500, model: 'scripted:summary', instructions: 'Keep ids.' } } });
    assert.deepEqual(errors, []);
    assert.deepEqual(definition?.context, { window_tokens: 4096, compaction: { mode: 'manual', threshold: 0.7, keep_recent_tokens: 500, model: 'scripted:summary', instructions: 'Keep ids.' } });
    assert.deepEqual(parseAgentDefinition({ name: 'a' }).definition?.context, {});
  });
});

describe('scripted summariser', () => {
  const scripted = new ScriptedProvider(new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x' }));
  const collect = async (events: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> => {
    const all: ModelEvent[] = [];
    for await (const event of events) all.push(event);
    return all;
  };
  it('keeps the previous facts and the first words of each user message, deterministically', async () => {
    const text = transcript('Facts:\n- user: order 4711', [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen' }] }], 10_000);
    const request = { model: 'x', instructions: 'summarise', messages: [{ role: 'user' as const, text }], tools: [], signal: new AbortController().signal, purpose: 'compaction' as const };
    const first = await collect(scripted.stream(request));
    assert.deepEqual(first, await collect(scripted.stream(request)), 'deterministic');
    const summary = first.find((e) => e.type === 'text_delta');
    assert.equal(summary?.type === 'text_delta' && summary.delta, 'Facts:\n- user: order 4711\n- user: one two three four five six seven eight nine ten eleven twelve thirteen fourteen');
    assert.ok(first.at(-1)?.type === 'usage');
  });

  it('refuses a request longer than its documented window, as a provider would', async () => {
    const request = { model: 'x', instructions: '', messages: [{ role: 'user' as const, text: 'word '.repeat(SCRIPTED_WINDOW_TOKENS + 10) }], tools: [], signal: new AbortController().signal };
    await assert.rejects(collect(scripted.stream(request)), (error: unknown) => error instanceof ModelError && error.code === 'model_context_length_exceeded' && !error.retryable);
  });
});

describe('context cache', () => {
  const at = new Date(0);
  const item = (seq: number, type = 'message', role: string | null = 'user'): ItemEntity =>
    ({ id: `i${seq}`, sessionId: 's', turnId: 't', runId: null, inputId: null, seq: String(seq), type, role, status: 'completed', content: [], phase: null, tokens: 5, createdAt: at }) as ItemEntity;

  it('extends a cached context with what was written since; a new user message ends the pinning; a compaction forces a re-read', () => {
    const cache = new ContextCache();
    cache.set('s', { compaction: item(9, 'compaction', null), pinned: item(3), items: [item(7, 'message', 'assistant'), item(8, 'message', 'assistant')] }, 10);
    const cached = cache.get('s')!;
    assert.equal(cached.lastSeq, '9');
    const assistantOnly = ContextCache.extend(cached, [item(10, 'message', 'assistant')]);
    assert.deepEqual(assistantOnly?.items.map((i) => i.seq), ['7', '8', '10']);
    assert.equal(assistantOnly?.pinned?.seq, '3', 'still the latest user message');
    assert.equal(ContextCache.extend(cached, [item(10)])?.pinned, null, 'the new user message is among the items');
    assert.equal(ContextCache.extend(cached, [item(10, 'compaction', null)]), null);
  });

  it('keeps at most 256 sessions, dropping the least recently used, and no oversized context', () => {
    const cache = new ContextCache();
    for (let n = 0; n < 257; n += 1) cache.set(`s${n}`, { compaction: null, pinned: null, items: [item(1)] }, 5);
    assert.equal(cache.get('s0'), undefined);
    assert.ok(cache.get('s256'));
    cache.set('big', { compaction: null, pinned: null, items: [item(1)] }, 10_000_000);
    assert.equal(cache.get('big'), undefined);
  });
});
