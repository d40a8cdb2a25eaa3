import { DomainError } from '#libs/errors';

/** Bounds of a session's `metadata`, as OpenAI bounds its resources' metadata. */
export const METADATA_LIMITS = { maxKeys: 16, maxKeyLength: 64, maxValueLength: 512 } as const;

/** What is wrong with a metadata map (empty: nothing); each message names the offending key. */
export function metadataErrors(value: unknown): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return ['must be an object of string values'];
  const entries = Object.entries(value as Record<string, unknown>);
  const errors: string[] = [];
  if (entries.length > METADATA_LIMITS.maxKeys) errors.push(`must have at most ${METADATA_LIMITS.maxKeys} keys (got ${entries.length})`);
  for (const [key, item] of entries) {
    if (key.length === 0 || key.length > METADATA_LIMITS.maxKeyLength) errors.push(`key "${key.slice(0, 80)}" must be 1–${METADATA_LIMITS.maxKeyLength} characters`);
    if (typeof item !== 'string') errors.push(`value of "${key.slice(0, 80)}" must be a string`);
    else if (item.length > METADATA_LIMITS.maxValueLength) errors.push(`value of "${key.slice(0, 80)}" must be at most ${METADATA_LIMITS.maxValueLength} characters`);
  }
  return errors;
}

/**
 * The metadata a create or update sets: top-level `metadata` (where the upstream Agents API and its
 * official SDK put it) or `yuxi.metadata`, one map under two names. Both, with different maps: 422.
 */
export function chosenMetadata(topLevel: Record<string, string> | undefined, yuxi: Record<string, string> | undefined): Record<string, string> | undefined {
  if (topLevel !== undefined && yuxi !== undefined && !sameMap(topLevel, yuxi)) {
    throw DomainError.validation([{ field: 'metadata', errors: ['metadata and yuxi.metadata are one map: send it once, or the same map in both'] }]);
  }
  return topLevel ?? yuxi;
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && b[key] === a[key]);
}

const FILTER_KEY = /^metadata\[([^[\]]*)\]$/;

/**
 * The list filter `?metadata[key]=value` (OpenAPI's deepObject style). Express 5 parses queries
 * flat, so the pairs arrive as keys `metadata[key]`; they are gathered into one `metadata` object
 * that the query DTO validates like any other field. A repeated key stays an array (and fails
 * validation rather than picking one value silently).
 */
export function gatherMetadataFilter(query: Record<string, unknown>): Record<string, unknown> {
  let metadata: Record<string, unknown> | undefined;
  const rest: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    const match = FILTER_KEY.exec(name);
    // No prototype: a key named __proto__ is a key like any other (a filter, validated), never the object's prototype.
    if (match) (metadata ??= Object.create(null) as Record<string, unknown>)[match[1]!] = value;
    else rest[name] = value;
  }
  return metadata === undefined ? rest : { ...rest, metadata };
}

const ETAG = /^(?:W\/)?"(\d{1,9})"$|^(\d{1,9})$/;

/**
 * The revision an `If-Match` header asks for: the session's `yuxi.revision`, quoted (`"3"`) or bare
 * (`3`). Absent, or `*` (any current representation): no condition. Anything else is 422: a
 * condition the server cannot read must not be ignored.
 */
export function parseIfMatch(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value === '*') return undefined;
  const match = ETAG.exec(value);
  if (!match) throw DomainError.validation([{ field: 'If-Match', errors: ['must be the session\'s yuxi.revision, bare (3) or quoted ("3")'] }]);
  return Number(match[1] ?? match[2]);
}
