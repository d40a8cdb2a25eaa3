import fc from 'fast-check';
import type { Operation, Parameter, Schema } from './openapi-model.js';
import { multipartValue } from './multipart.js';
import { HOSTILE_STRINGS, JUNK_IDS, mutatedValue, nested, validValue, type ValueContext } from './values.js';

// One fuzzed request per sample: path, query, headers and body from the operation's declaration,
// each part valid or, now and then, mutated — mostly one fault at a time, so that requests get past
// the first check and reach the handlers behind it.

export type Body =
  | { kind: 'json'; value: unknown }
  /** Sent as is, with this Content-Type (null: none) and Content-Encoding. */
  | { kind: 'raw'; text: string; contentType: string | null; encoding?: string; /** Gzip the bytes (a valid Content-Encoding: gzip). */ compress?: boolean }
  /** Bytes sent as they are (a multipart body), with this Content-Type (null: none); `shown` in failure messages. */
  | { kind: 'bytes'; bytes: Uint8Array; contentType: string | null; shown: string };

export interface FuzzCase {
  pathParams: Record<string, string>;
  query: [string, string][];
  /** Header overrides: a string replaces the default, null drops it. */
  headers: Record<string, string | null>;
  body?: Body;
  /** What was mutated, for the failure message. */
  notes: string[];
}

export interface CaseContext extends ValueContext {
  /** Authorization values that must be refused (garbage, a revoked key, forged tokens). */
  badCredentials: readonly string[];
}

/** Header values fetch can send (Latin-1, no CR/LF/NUL) that are wrong as an Idempotency-Key. */
const BAD_IDEMPOTENCY_KEYS: readonly [string, string | null][] = [
  ['missing Idempotency-Key', null],
  ['empty Idempotency-Key', ''],
  ['129-character Idempotency-Key', 'k'.repeat(129)],
  ['Latin-1 Idempotency-Key', 'cl\u00e9-\u00ff'],
  ['Idempotency-Key with spaces and a comma', 'a b, c'],
];

const ODD_CONTENT_TYPES: readonly (string | null)[] = [
  null,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/vnd.api+json',
  'application/merge-patch+json',
  '*/*',
  ';;;',
];

/** Not JSON, or JSON that no serializer here could write (20,000 nested arrays). */
const NOT_JSON: readonly string[] = [
  `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
  `{"a":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_001)}`,'not json', '{', '{"a":', "{'a':1}", '{"a":1}garbage', '\ufeff{}', 'nul', '[1,]', '{"a":NaN}', ' '];

const TOP_LEVEL_JSON: readonly unknown[] = [null, [], 'a string', 0, true, {}, nested(70, 'array')];

function weighted<T>(...options: [number, fc.Arbitrary<T>][]): fc.Arbitrary<T> {
  return fc.oneof(...options.filter(([weight]) => weight > 0).map(([weight, arbitrary]) => ({ weight, arbitrary })));
}

/** Path parameter values: mostly real ids (deep handlers), sometimes well-formed unknowns, sometimes junk. */
function pathValue(param: Parameter, ctx: CaseContext): fc.Arbitrary<{ value: string; note?: string }> {
  const known = ctx.known(param.name);
  return weighted<{ value: string; note?: string }>(
    [known.length > 0 ? 14 : 0, fc.constantFrom(...(known.length > 0 ? known : ['-'])).map((value) => ({ value }))],
    [2, fc.uuid().map((value) => ({ value, note: `${param.name}: an unknown uuid` }))],
    [3, fc.constantFrom(...JUNK_IDS, ...HOSTILE_STRINGS.filter((h) => h.trim() !== '' && h.length < 5000)).map((value) => ({ value, note: `${param.name}: junk ${JSON.stringify(value.slice(0, 40))}` }))],
    [1, fc.string({ minLength: 1, maxLength: 30, unit: 'grapheme' }).map((value) => ({ value, note: `${param.name}: random ${JSON.stringify(value)}` }))],
  );
}

/** Query parameters: each omitted, valid or broken; now and then repeated or joined by an unknown one. */
function queryValue(params: Parameter[], ctx: CaseContext): fc.Arbitrary<{ query: [string, string][]; notes: string[] }> {
  const perParam = params.map((param) => {
    const stringify = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));
    const valid = validValue(param.schema, ctx, param.name).map((value) => ({ pairs: [[param.name, stringify(value)]] as [string, string][], note: '' }));
    const broken = weighted<{ pairs: [string, string][]; note: string }>(
      [4, mutatedValue(param.schema, ctx, param.name).map(({ value, note }) => ({ pairs: [[param.name, stringify(value)]] as [string, string][], note: `?${param.name}: ${note}` }))],
      [2, fc.constantFrom('', ' ', 'abc', '1.5', '-1', '0', '1e2', '0x10', 'TRUE', '1', '%', '\u00e9', 'x'.repeat(5000)).map((value) => ({ pairs: [[param.name, value]] as [string, string][], note: `?${param.name}=${JSON.stringify(value.slice(0, 20))}` }))],
      [1, fc.tuple(valid, valid).map(([a, b]) => ({ pairs: [...a.pairs, ...b.pairs], note: `?${param.name} repeated` }))],
    );
    const omitted = fc.constant({ pairs: [] as [string, string][], note: '' });
    return weighted([param.required ? 0 : 4, omitted], [4, valid], [2, broken]);
  });
  const unknown = fc.constantFrom('zz_unknown=1', '__proto__=x', 'constructor=1', 'limit[]=1', 'after[a]=b').map((pair) => {
    const [name, value] = pair.split('=') as [string, string];
    return { pairs: [[name, value]] as [string, string][], note: `unknown query ${name}` };
  });
  return fc.tuple(fc.tuple(...perParam), weighted([9, fc.constant(null)], [1, unknown])).map(([parts, extra]) => {
    const all = extra ? [...parts, extra] : parts;
    return { query: all.flatMap((p) => p.pairs), notes: all.map((p) => p.note).filter(Boolean) };
  });
}

/** The request body: valid, mutated inside, replaced at the top, not JSON, or sent with an odd Content-Type or encoding. */
function bodyValue(schema: Schema, examples: unknown[], ctx: CaseContext): fc.Arbitrary<{ body: Body; notes: string[] }> {
  const json = (value: unknown, notes: string[]) => ({ body: { kind: 'json', value } as Body, notes });
  const raw = (text: string, contentType: string | null, note: string, encoding?: string) => ({ body: { kind: 'raw', text, contentType, encoding } as Body, notes: [note] });
  const valid = validValue(schema, ctx);
  return weighted<{ body: Body; notes: string[] }>(
    [14, valid.map((value) => json(value, []))],
    [examples.length > 0 ? 6 : 0, fc.constantFrom(...(examples.length > 0 ? examples : [null])).map((value) => json(value, ['the document\'s example']))],
    [9, mutatedValue(schema, ctx).map(({ value, note }) => json(value, [`body ${note}`]))],
    [1, fc.constantFrom(...TOP_LEVEL_JSON).map((value) => json(value, [`body replaced by ${JSON.stringify(value)?.slice(0, 30)}`]))],
    [1, fc.constantFrom(...NOT_JSON).map((text) => raw(text, 'application/json', `raw body: ${JSON.stringify(text.slice(0, 40))}`))],
    [1, fc.tuple(valid, fc.constantFrom(...ODD_CONTENT_TYPES)).map(([value, type]) => raw(JSON.stringify(value) ?? '', type, `Content-Type ${JSON.stringify(type)}`))],
    [
      1,
      fc.tuple(valid, fc.constantFrom('gzip', 'deflate', 'br', 'x-unknown', 'identity')).map(([value, encoding]) =>
        raw(JSON.stringify(value) ?? '', 'application/json', `Content-Encoding ${encoding} on a plain body`, encoding),
      ),
    ],
    [1, valid.map((value) => ({ body: { kind: 'raw', text: JSON.stringify(value) ?? '', contentType: 'application/json', encoding: 'gzip', compress: true } as Body, notes: ['a gzipped body'] }))],
  );
}

/** Headers other than the body's: the operation's own (Idempotency-Key, Last-Event-ID) and credentials. */
function headerValues(op: Operation, ctx: CaseContext): fc.Arbitrary<{ headers: Record<string, string | null>; notes: string[] }> {
  type Part = { headers: Record<string, string | null>; note: string };
  const parts: fc.Arbitrary<Part>[] = [];
  for (const param of op.parameters.filter((p) => p.in === 'header')) {
    const name = param.name.toLowerCase();
    if (name === 'idempotency-key') {
      parts.push(
        weighted<Part>(
          [9, fc.constant({ headers: {}, note: '' })],
          [2, fc.constantFrom(...BAD_IDEMPOTENCY_KEYS).map(([note, value]) => ({ headers: { [name]: value }, note }))],
          [1, fc.constant({ headers: { [name]: 'k'.repeat(128) }, note: '128-character Idempotency-Key' })],
          [1, fc.constant({ headers: { [name]: '<reuse>' }, note: 'Idempotency-Key of the previous request' })],
        ),
      );
    } else if (name === 'x-end-user-id') {
      // Only app-bound keys may send it (the suite's key is not one: any value is a 403), so it is
      // mutated as rarely as the credentials, leaving the requests to reach what is behind it.
      parts.push(
        weighted<Part>(
          [24, fc.constant({ headers: {}, note: '' })],
          [1, fc.constantFrom('app-user', 'x'.repeat(128), 'x'.repeat(129), '', ' padded ', 'trailing\t', '\u00e9', '1-2-3').map((value) => ({ headers: { [name]: value }, note: `${param.name}: ${JSON.stringify(value.slice(0, 20))}` }))],
        ),
      );
    } else {
      const known = ctx.known(name);
      parts.push(
        weighted<Part>(
          [4, fc.constant({ headers: {}, note: '' })],
          [known.length > 0 ? 3 : 0, fc.constantFrom(...(known.length > 0 ? known : ['-'])).map((value) => ({ headers: { [name]: value }, note: `${param.name}: a real value` }))],
          [3, fc.constantFrom('', 'garbage', '0', '-1', 'x'.repeat(2000), '\u00e9', '1-2-3', 'eyJ9').map((value) => ({ headers: { [name]: value }, note: `${param.name}: ${JSON.stringify(value.slice(0, 20))}` }))],
        ),
      );
    }
  }
  if (op.path.startsWith('/api/')) {
    parts.push(
      weighted<Part>(
        [24, fc.constant({ headers: {}, note: '' })],
        [1, fc.constantFrom(...ctx.badCredentials).map((value) => ({ headers: { authorization: value === '' ? null : value }, note: `Authorization ${JSON.stringify(value.slice(0, 30))}` }))],
        [1, fc.constantFrom('x'.repeat(1000), '\u00e9\u00e8', 'trace id with spaces').map((value) => ({ headers: { 'x-request-id': value }, note: `X-Request-Id ${JSON.stringify(value.slice(0, 20))}` }))],
      ),
    );
  }
  if (parts.length === 0) return fc.constant({ headers: {}, notes: [] });
  return fc.tuple(...parts).map((all) => ({ headers: Object.assign({}, ...all.map((p) => p.headers)), notes: all.map((p) => p.note).filter(Boolean) }));
}

/** Every part of one request to this operation. */
export function fuzzCases(op: Operation, ctx: CaseContext): fc.Arbitrary<FuzzCase> {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  type PathValue = { name: string; value: string; note?: string };
  const path: fc.Arbitrary<PathValue[]> = pathParams.length === 0 ? fc.constant([]) : fc.tuple(...pathParams.map((p) => pathValue(p, ctx).map((v) => ({ name: p.name, ...v }))));
  const query = queryParams.length === 0 ? fc.constant({ query: [] as [string, string][], notes: [] as string[] }) : queryValue(queryParams, ctx);
  const body = op.body
    ? bodyValue(op.body, op.bodyExamples, ctx)
    : op.multipart
      ? multipartValue(op.multipart).map(({ bytes, contentType, shown, notes }) => ({ body: { kind: 'bytes', bytes, contentType, shown } as Body, notes }))
      : fc.constant(undefined);
  return fc.record({ path, query, headers: headerValues(op, ctx), body }).map(({ path: params, query: q, headers, body: b }) => ({
    pathParams: Object.fromEntries(params.map((p) => [p.name, p.value])),
    query: q.query,
    headers: headers.headers,
    body: b?.body,
    notes: [...params.flatMap((p) => (p.note ? [p.note] : [])), ...q.notes, ...headers.notes, ...(b?.notes ?? [])],
  }));
}
