import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toUsage } from '#libs/models';
import { type CallTokens, modelCallEntry, parseModelPrice, parseModelPricesFile, tokenCount, toolCallEntry, usageTotals } from '#libs/usage';

describe('model prices as the admin API and MODEL_PRICES_FILE take them (parseModelPrice)', () => {
  it('takes the two required prices and the optional cached and reasoning ones (absent: null, the fallback)', () => {
    assert.deepEqual(parseModelPrice('openai:gpt-4o-mini', { input_per_mtok_usd: 0.15, output_per_mtok_usd: 0.6 }), {
      price: { model: 'openai:gpt-4o-mini', input_per_mtok_usd: 0.15, output_per_mtok_usd: 0.6, cached_input_per_mtok_usd: null, reasoning_per_mtok_usd: null },
    });
    const full = parseModelPrice('scripted:echo', { input_per_mtok_usd: 0, output_per_mtok_usd: 100_000, cached_input_per_mtok_usd: 1, reasoning_per_mtok_usd: 2 });
    assert.ok('price' in full && full.price.cached_input_per_mtok_usd === 1 && full.price.reasoning_per_mtok_usd === 2);
  });

  it('names every bad field: missing, negative, too large, not a number, explicit null, unknown', () => {
    const fields = (body: unknown, model = 'openai:gpt-x'): string[] => {
      const parsed = parseModelPrice(model, body);
      return 'problems' in parsed ? parsed.problems.map((p) => p.field) : [];
    };
    assert.deepEqual(fields({ output_per_mtok_usd: 1 }), ['input_per_mtok_usd']);
    assert.deepEqual(fields({ input_per_mtok_usd: -1, output_per_mtok_usd: 100_001 }), ['input_per_mtok_usd', 'output_per_mtok_usd']);
    assert.deepEqual(fields({ input_per_mtok_usd: '1', output_per_mtok_usd: 1, cached_input_per_mtok_usd: null }), ['input_per_mtok_usd', 'cached_input_per_mtok_usd']);
    assert.deepEqual(fields({ input_per_mtok_usd: 1, output_per_mtok_usd: 1, currency: 'EUR' }), ['currency']);
    assert.deepEqual(fields([1, 2]), ['body']);
    assert.deepEqual(fields({ input_per_mtok_usd: Number.NaN, output_per_mtok_usd: Number.POSITIVE_INFINITY }), ['input_per_mtok_usd', 'output_per_mtok_usd']);
  });

  it('takes a model only as provider:model, printable, at most 200 characters', () => {
    const ok = { input_per_mtok_usd: 1, output_per_mtok_usd: 1 };
    for (const model of ['gpt-4o', 'openai:', ':gpt', 'openai:gpt 4o', `openai:${'x'.repeat(200)}`, 'openai:gpt\u0000']) assert.ok('problems' in parseModelPrice(model, ok), model);
    assert.ok('price' in parseModelPrice(`openai:${'x'.repeat(190)}`, ok));
  });
});

describe('MODEL_PRICES_FILE (parseModelPricesFile)', () => {
  it('reads a map of model to price, or the same map under model_prices', () => {
    const map = { 'openai:a': { input_per_mtok_usd: 1, output_per_mtok_usd: 2 }, 'openai:b': { input_per_mtok_usd: 3, output_per_mtok_usd: 4, reasoning_per_mtok_usd: 5 } };
    assert.deepEqual(parseModelPricesFile(map, 'f.yaml').map((p) => p.model), ['openai:a', 'openai:b']);
    assert.deepEqual(parseModelPricesFile({ model_prices: map }, 'f.yaml'), parseModelPricesFile(map, 'f.yaml'));
  });

  it('refuses a file that is not a map, or any bad price, naming the file and each problem', () => {
    assert.throws(() => parseModelPricesFile(['openai:a'], 'prices.json'), /MODEL_PRICES_FILE prices\.json must hold a map/);
    assert.throws(
      () => parseModelPricesFile({ 'openai:a': { input_per_mtok_usd: -1, output_per_mtok_usd: 1 }, 'no-provider': { input_per_mtok_usd: 1, output_per_mtok_usd: 1 } }, 'prices.yaml'),
      (error: Error) => /prices\.yaml is invalid/.test(error.message) && error.message.includes('openai:a.input_per_mtok_usd') && error.message.includes('no-provider: must be provider:model'),
    );
  });
});

describe('usage as resources show it (usageTotals) and ledger entries', () => {
  it('fills the fields a row written before them lacks, keeps null as nothing used and a null cost as unpriced', () => {
    assert.equal(usageTotals(null), null);
    assert.deepEqual(usageTotals({ input_tokens: 3, output_tokens: 2, cached_tokens: 1, total_tokens: 5 }), {
      input_tokens: 3,
      output_tokens: 2,
      cached_tokens: 1,
      reasoning_tokens: 0,
      total_tokens: 5,
      model_calls: 0,
      tool_calls: 0,
      cost_microusd: null,
    });
    assert.equal(usageTotals({ input_tokens: 1, output_tokens: 1, cached_tokens: 0, total_tokens: 2, cost_microusd: '42' })!.cost_microusd, 42);
  });

  it('a model call without reported usage is a call with no tokens; wall times are whole, never negative', () => {
    assert.deepEqual(modelCallEntry('sampling', 'openai:x', null, { wallMs: 12.6 }), {
      kind: 'sampling',
      model: 'openai:x',
      step_id: null,
      input_tokens: 0,
      output_tokens: 0,
      cached_tokens: 0,
      reasoning_tokens: 0,
      wall_ms: 13,
    });
    assert.deepEqual(toolCallEntry('command', 'shell', -5), { kind: 'command', tool: 'shell', wall_ms: 0 });
  });

  it('a ledger entry\'s counts are non-negative integers whatever a provider sent (the bigint columns never fail the statement)', () => {
    const odd = { input_tokens: 100.7, output_tokens: -5, cached_tokens: 400, reasoning_tokens: Number.NaN } as CallTokens;
    assert.deepEqual(modelCallEntry('model_call', 'openai:x', odd), {
      kind: 'model_call',
      model: 'openai:x',
      step_id: null,
      input_tokens: 100,
      output_tokens: 0,
      cached_tokens: 100,
      reasoning_tokens: 0,
      wall_ms: 0,
    });
    assert.equal(tokenCount(1e300), Number.MAX_SAFE_INTEGER);
    assert.equal(tokenCount('12'), 12);
    assert.equal(tokenCount(null), 0);
  });
});

describe('the OpenAI provider\'s usage (toUsage)', () => {
  it('reads cached and reasoning tokens from the chat completion details, or the Responses API\'s names', () => {
    assert.deepEqual(toUsage({ prompt_tokens: 10, completion_tokens: 7, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 5 } }), {
      input_tokens: 10,
      output_tokens: 7,
      cached_tokens: 4,
      reasoning_tokens: 5,
      total_tokens: 17,
    });
    const responses = { input_tokens: 8, output_tokens: 3, input_tokens_details: { cached_tokens: 2 }, output_tokens_details: { reasoning_tokens: 1 } } as never;
    assert.deepEqual(toUsage(responses), { input_tokens: 8, output_tokens: 3, cached_tokens: 2, reasoning_tokens: 1, total_tokens: 11 });
  });

  it('makes odd counts from an OpenAI-compatible server non-negative integers (truncated; 0 when not a number)', () => {
    const odd = { prompt_tokens: 12.9, completion_tokens: -3, total_tokens: 1e3, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 'x' } } as unknown as Parameters<typeof toUsage>[0];
    assert.deepEqual(toUsage(odd), { input_tokens: 12, output_tokens: 0, cached_tokens: 12, reasoning_tokens: 0, total_tokens: 1000 });
    assert.deepEqual(toUsage({ prompt_tokens: '7', completion_tokens: Number.NaN, total_tokens: Infinity } as unknown as Parameters<typeof toUsage>[0]), {
      input_tokens: 7,
      output_tokens: 0,
      cached_tokens: 0,
      reasoning_tokens: 0,
      total_tokens: 0,
    });
  });
});
