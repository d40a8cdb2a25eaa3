import fc from 'fast-check';
import type { Schema } from './openapi-model.js';

// Values from the document's schemas, for the fuzzer: valid ones (with the boundaries of each
// constraint and, where the fuzzer holds some, real ids) and mutated ones (wrong types, broken
// constraints, missing and extra fields, hostile strings, deep nesting).

export interface ValueContext {
  components: Record<string, Schema>;
  /** Real ids (or other known-good values) for a field or parameter of this name; empty if none. */
  known(name: string): string[];
}

/** Strings that have broken servers: empty, huge, control and invisible characters, lone surrogates, injections. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\t\n',
  'x'.repeat(70_000),
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\u202eevil',
  '\ufeffbom',
  '\u2028\u2029',
  '\u0001\u0002\u007f',
  'e\u0301\u0301\u0301',
  '👩‍👩‍👧‍👦',
  'Ω'.repeat(300),
  'null',
  'true',
  '-1',
  '1e309',
  'NaN',
  '%00',
  '%s%n%x',
  "' OR '1'='1",
  '"; DROP TABLE sessions; --',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  '__proto__',
  'constructor',
];

/** Ids that are not ids of anything: malformed, nil, unknown, almost-UUIDs, other id shapes. */
export const JUNK_IDS: readonly string[] = [
  'nope',
  '0',
  '-1',
  '00000000-0000-0000-0000-000000000000',
  '0190f6a2-8bdf-7435-8da3-a93fcf70dbb0',
  '0190F6A2-8BDF-7435-8DA3-A93FCF70DBB0',
  '{0190f6a2-8bdf-7435-8da3-a93fcf70dbb0}',
  '0190f6a2-8bdf-7435-8da3-a93fcf70dbb0x',
  '0190f6a28bdf74358da3a93fcf70dbb0',
  'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz',
  '9'.repeat(40),
  'x'.repeat(65),
  'x'.repeat(3000),
  'ses_0123456789',
  'a b',
  'é',
  '\u0000',
  '\ud800',
  "'; SELECT 1; --",
  '%',
  '..%2f',
];

/** Nested arrays or objects this deep (the server refuses bodies deeper than 64 levels). */
export function nested(depth: number, kind: 'array' | 'object'): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i += 1) value = kind === 'array' ? [value] : { a: value };
  return value;
}

/** The schema behind `$ref`s, with `allOf` parts merged into one. */
export function resolve(schema: Schema, ctx: ValueContext): Schema {
  let current = schema;
  for (let hops = 0; current.$ref && hops < 20; hops += 1) {
    const { $ref, ...rest } = current;
    current = { ...ctx.components[String($ref).replace('#/components/schemas/', '')], ...rest };
  }
  if (!current.allOf) return current;
  const { allOf, ...rest } = current;
  const merged: Schema = { ...rest };
  for (const part of (allOf as Schema[]).map((p) => resolve(p, ctx))) {
    Object.assign(merged, { ...part, ...merged });
    if (part.properties) merged.properties = { ...part.properties, ...rest.properties };
    if (part.required) merged.required = [...new Set([...(merged.required ?? []), ...part.required])];
  }
  return merged;
}

/** No schema of the document recurses; this only guards against one that would. */
const MAX_DEPTH = 24;

/** A value the schema accepts (as far as a schema can tell: ids may still name nothing). */
export function validValue(schema: Schema, ctx: ValueContext, name = '', depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema, ctx);
  if (depth > MAX_DEPTH) return fc.constant(null);
  if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((alt) => validValue(alt, ctx, name, depth + 1)));
  switch (s.type) {
    case 'string':
      return stringValue(s, ctx, name);
    case 'integer':
    case 'number':
      return numberValue(s);
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const min = s.minItems ?? 0;
      const max = Math.min(s.maxItems ?? min + 3, min + 3);
      const items = validValue(s.items ?? {}, ctx, name, depth + 1);
      const arrays: fc.WeightedArbitrary<unknown[]>[] = [{ weight: 8, arbitrary: fc.array(items, { minLength: min, maxLength: max }) }];
      if (s.maxItems !== undefined && s.maxItems <= 64) arrays.push({ weight: 1, arbitrary: fc.array(items, { minLength: s.maxItems, maxLength: s.maxItems }) });
      return fc.oneof(...arrays);
    }
    case 'object':
    case undefined:
      if (s.type === undefined && !s.properties) return fc.jsonValue({ maxDepth: 2 });
      return objectValue(s, ctx, depth);
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function stringValue(s: Schema, ctx: ValueContext, name: string): fc.Arbitrary<string> {
  const min: number = s.minLength ?? 0;
  const max: number = s.maxLength ?? Number.POSITIVE_INFINITY;
  const fits = (value: string) => value.length >= min && value.length <= max;
  const options: fc.WeightedArbitrary<string>[] = [];
  const known = ctx.known(name);
  if (known.length > 0) options.push({ weight: 12, arbitrary: fc.constantFrom(...known) });
  if (s.example !== undefined) options.push({ weight: 4, arbitrary: fc.constant(String(s.example)) });
  if (s.pattern) options.push({ weight: 6, arbitrary: fc.stringMatching(new RegExp(s.pattern)).filter(fits) });
  else if (s.format === 'uuid') options.push({ weight: 6, arbitrary: fc.uuid() });
  else if (s.format === 'date-time') options.push({ weight: 6, arbitrary: fc.date({ min: new Date('2001-01-01'), max: new Date('2099-01-01'), noInvalidDate: true }).map((d) => d.toISOString()) });
  else if (s.format === 'uri') options.push({ weight: 6, arbitrary: fc.webUrl() });
  else {
    const upTo = Math.min(max, min + 24);
    options.push({ weight: 4, arbitrary: fc.string({ minLength: min, maxLength: upTo }) });
    options.push({ weight: 2, arbitrary: fc.string({ minLength: min, maxLength: upTo, unit: 'grapheme' }).filter(fits) });
    // The boundaries of the declared lengths.
    options.push({ weight: 1, arbitrary: fc.constant('b'.repeat(Math.max(min, 1))).filter(fits) });
    if (Number.isFinite(max) && max <= 200_000) options.push({ weight: 1, arbitrary: fc.constant('m'.repeat(max)) });
  }
  return fc.oneof(...options);
}

function numberValue(s: Schema): fc.Arbitrary<number> {
  const min: number = s.minimum ?? -1_000_000;
  const max: number = s.maximum ?? 1_000_000;
  const options: fc.Arbitrary<number>[] = [fc.constantFrom(min, max)];
  // A range of fractions (a threshold of 0.1–0.95) holds no integer.
  if (Math.ceil(min) <= Math.floor(max)) options.push(fc.integer({ min: Math.ceil(min), max: Math.floor(max) }));
  if (s.type === 'number') options.push(fc.double({ min, max, noNaN: true, noDefaultInfinity: true }));
  return fc.oneof(...options);
}

function objectValue(s: Schema, ctx: ValueContext, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  const required = new Set<string>(s.required ?? []);
  const record = fc.record(
    Object.fromEntries(Object.entries(properties).map(([key, schema]) => [key, validValue(schema, ctx, key, depth + 1)])),
    { requiredKeys: Object.keys(properties).filter((key) => required.has(key)) },
  ) as fc.Arbitrary<Record<string, unknown>>;
  const extra = s.additionalProperties;
  if (!extra || Object.keys(properties).length > 0) return record;
  const values = extra === true ? fc.jsonValue({ maxDepth: 2 }) : validValue(extra as Schema, ctx, '', depth + 1);
  return fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), values, { maxKeys: 3 });
}

/** A value the schema refuses: one broken constraint, somewhere in the structure. */
export function mutatedValue(schema: Schema, ctx: ValueContext, name = '', depth = 0): fc.Arbitrary<{ value: unknown; note: string }> {
  const s = resolve(schema, ctx);
  const here = brokenHere(s, name);
  if (depth > MAX_DEPTH) return here;
  const options: fc.WeightedArbitrary<{ value: unknown; note: string }>[] = [{ weight: 3, arbitrary: here }];
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  const keys = Object.keys(properties);
  if (keys.length > 0) {
    const valid = validValue(s, ctx, name, depth) as fc.Arbitrary<Record<string, unknown>>;
    // One field broken, the rest valid: how a deep handler gets reached with one bad field.
    for (const key of keys) {
      options.push({
        weight: 2,
        arbitrary: fc.tuple(valid, mutatedValue(properties[key]!, ctx, key, depth + 1)).map(([object, bad]) => ({ value: { ...object, [key]: bad.value }, note: `${key}: ${bad.note}` })),
      });
    }
    for (const key of (s.required ?? []) as string[]) {
      options.push({ weight: 1, arbitrary: valid.map((object) => ({ value: withoutKey(object, key), note: `required ${key} missing` })) });
    }
    options.push({
      weight: 1,
      arbitrary: fc.tuple(valid, fc.constantFrom('zz_unknown', '__proto__', 'constructor', 'yuxi_extra'), fc.jsonValue({ maxDepth: 2 })).map(([object, key, extra]) => ({
        // Parsed and spread: `__proto__` becomes an own field, as a JSON body would have it.
        value: { ...(JSON.parse(`{${JSON.stringify(key)}:${JSON.stringify(extra)}}`) as object), ...object },
        note: `extra field ${key}`,
      })),
    });
  }
  if (s.type === 'array' && s.items) {
    const items = validValue(s.items, ctx, name, depth + 1);
    options.push({
      weight: 2,
      arbitrary: fc.tuple(fc.array(items, { maxLength: 2 }), mutatedValue(s.items, ctx, name, depth + 1)).map(([array, bad]) => ({ value: [...array, bad.value], note: `[item]: ${bad.note}` })),
    });
  }
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alternatives) {
    for (const alt of alternatives) options.push({ weight: 1, arbitrary: mutatedValue(alt, ctx, name, depth + 1) });
  }
  return fc.oneof(...options);
}

function withoutKey(object: Record<string, unknown>, key: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([name]) => name !== key));
}

/** A replacement for this very value: the wrong type, null, a broken constraint, a hostile string, deep nesting. */
function brokenHere(s: Schema, name: string): fc.Arbitrary<{ value: unknown; note: string }> {
  const options: [string, unknown][] = [
    ['null', null],
    ['deep nesting (70 arrays)', nested(70, 'array')],
    ['deep nesting (3000 objects)', nested(3000, 'object')],
  ];
  if (s.type !== 'string') options.push(['a string for a non-string', 'text'], ...HOSTILE_STRINGS.slice(4, 8).map((h): [string, unknown] => [`hostile string ${JSON.stringify(h)}`, h]));
  if (s.type !== 'number' && s.type !== 'integer') options.push(['a number', 42], ['a huge number', 1e308], ['a negative zero', -0]);
  if (s.type !== 'boolean') options.push(['a boolean', true]);
  if (s.type !== 'array') options.push(['an array', ['x']], ['an empty array', []]);
  if (s.type !== 'object') options.push(['an object', { x: 1 }], ['an empty object', {}]);
  if (s.type === 'string') {
    for (const hostile of HOSTILE_STRINGS) options.push([`hostile string ${JSON.stringify(hostile.slice(0, 12))}${hostile.length > 12 ? `…(${hostile.length})` : ''}`, hostile]);
    if (s.minLength) options.push([`shorter than minLength ${s.minLength}`, 's'.repeat(s.minLength - 1)]);
    if (s.maxLength !== undefined && s.maxLength < 2_000_000) options.push([`longer than maxLength ${s.maxLength}`, 'L'.repeat(s.maxLength + 1)]);
    if (s.pattern) options.push([`not matching ${s.pattern}`, '!! not matching !!']);
    if (s.format) options.push([`not a ${s.format}`, `not-a-${s.format}`]);
    if (s.enum) options.push(['not in the enum', `${s.enum[0]}_not`], ['the enum in another case', String(s.enum[0]).toUpperCase()]);
    if (/(^|_)id$/.test(name)) for (const junk of JUNK_IDS) options.push([`junk id ${JSON.stringify(junk.slice(0, 40))}`, junk]);
  }
  if (s.type === 'integer' || s.type === 'number') {
    if (s.minimum !== undefined) options.push([`below minimum ${s.minimum}`, s.minimum - 1]);
    if (s.maximum !== undefined) options.push([`above maximum ${s.maximum}`, s.maximum + 1]);
    options.push(['a fraction', 1.5], ['a numeric string', '10'], ['a huge integer', 2 ** 63]);
  }
  if (s.type === 'array') {
    if (s.minItems) options.push([`fewer than minItems ${s.minItems}`, []]);
    if (s.maxItems !== undefined && s.maxItems < 1000) options.push([`more than maxItems ${s.maxItems}`, Array.from({ length: s.maxItems + 1 }, () => 'x')]);
  }
  if (s.type === 'boolean') options.push(['"true" as a string', 'true'], ['1 for a boolean', 1]);
  return fc.constantFrom(...options).map(([note, value]) => ({ value, note }));
}
