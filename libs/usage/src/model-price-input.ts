import type { ModelPrice } from './usage.types.js';

/** A price is at most this many USD per million tokens (a bound, not a market price: $0.1 a token). */
export const MAX_PRICE_PER_MTOK_USD = 100_000;
/** A model's key: `provider:model`, as runs name it (the same bounds as an agent's model). */
export const MODEL_KEY_PATTERN = /^[A-Za-z0-9_.-]{1,64}:[\x21-\x7e]{1,192}$/;
export const MODEL_KEY_MAX_LENGTH = 200;

const REQUIRED = ['input_per_mtok_usd', 'output_per_mtok_usd'] as const;
const OPTIONAL = ['cached_input_per_mtok_usd', 'reasoning_per_mtok_usd'] as const;

export interface FieldProblem {
  field: string;
  errors: string[];
}

/** The model key's problems (empty: a valid key). */
export function modelKeyProblems(model: unknown, field = 'model'): FieldProblem[] {
  if (typeof model !== 'string') return [{ field, errors: ['must be a string'] }];
  if (model.length > MODEL_KEY_MAX_LENGTH || !MODEL_KEY_PATTERN.test(model)) {
    return [{ field, errors: [`must be provider:model (at most ${MODEL_KEY_MAX_LENGTH} printable characters, no spaces), as agents name models`] }];
  }
  return [];
}

/**
 * A price as the admin API and MODEL_PRICES_FILE take it: `{input_per_mtok_usd,
 * output_per_mtok_usd, cached_input_per_mtok_usd?, reasoning_per_mtok_usd?}`, each a number of
 * USD per million tokens from 0 to MAX_PRICE_PER_MTOK_USD (stored to 6 decimals); no other field,
 * no explicit null. Returns the price, or every problem found (`field` prefixed with `prefix`).
 */
export function parseModelPrice(model: string, body: unknown, prefix = ''): { price: ModelPrice } | { problems: FieldProblem[] } {
  const problems: FieldProblem[] = modelKeyProblems(model, prefix ? `${prefix}` : 'model');
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { problems: [...problems, { field: prefix || 'body', errors: ['must be an object'] }] };
  const record = body as Record<string, unknown>;
  const name = (key: string): string => (prefix ? `${prefix}.${key}` : key);
  for (const key of Object.keys(record)) {
    if (!(REQUIRED as readonly string[]).includes(key) && !(OPTIONAL as readonly string[]).includes(key)) problems.push({ field: name(key), errors: ['is not a known field'] });
  }
  const check = (key: string, required: boolean): void => {
    const value = record[key];
    if (value === undefined) {
      if (required) problems.push({ field: name(key), errors: ['is required'] });
      return;
    }
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_PRICE_PER_MTOK_USD) {
      problems.push({ field: name(key), errors: [`must be a number from 0 to ${MAX_PRICE_PER_MTOK_USD} (USD per million tokens)`] });
    }
  };
  for (const key of REQUIRED) check(key, true);
  for (const key of OPTIONAL) check(key, false);
  if (problems.length > 0) return { problems };
  return {
    price: {
      model,
      input_per_mtok_usd: record.input_per_mtok_usd as number,
      output_per_mtok_usd: record.output_per_mtok_usd as number,
      cached_input_per_mtok_usd: (record.cached_input_per_mtok_usd as number | undefined) ?? null,
      reasoning_per_mtok_usd: (record.reasoning_per_mtok_usd as number | undefined) ?? null,
    },
  };
}

/**
 * The prices of a MODEL_PRICES_FILE, parsed (JSON or YAML): a map `{"provider:model": price}`, or
 * `{model_prices: {...}}`. Throws with every problem listed: a bad file stops the start.
 */
export function parseModelPricesFile(parsed: unknown, file: string): ModelPrice[] {
  const map = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && 'model_prices' in parsed ? (parsed as { model_prices: unknown }).model_prices : parsed;
  if (map === null || typeof map !== 'object' || Array.isArray(map)) throw new Error(`MODEL_PRICES_FILE ${file} must hold a map of provider:model to {input_per_mtok_usd, output_per_mtok_usd, cached_input_per_mtok_usd?, reasoning_per_mtok_usd?}`);
  const prices: ModelPrice[] = [];
  const problems: FieldProblem[] = [];
  for (const [model, body] of Object.entries(map as Record<string, unknown>)) {
    const parsedPrice = parseModelPrice(model, body, model);
    if ('price' in parsedPrice) prices.push(parsedPrice.price);
    else problems.push(...parsedPrice.problems);
  }
  if (problems.length > 0) throw new Error(`MODEL_PRICES_FILE ${file} is invalid: ${problems.map((p) => `${p.field}: ${p.errors.join(', ')}`).join('; ')}`);
  return prices;
}
