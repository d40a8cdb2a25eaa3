import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

// One instance for every tool schema. `addUsedSchema: false` keeps two agents' schemas that share
// an `$id` from colliding; formats are not validated because no format plugin is loaded (and the
// model gets a readable error for structure, which is what matters); `logger: false` keeps
// non-strict warnings about foreign keywords out of the worker's log.
const ajv = new Ajv({ strict: false, allErrors: true, addUsedSchema: false, validateFormats: false, logger: false });

// Bounded because MCP servers and agents can present arbitrarily many distinct schemas over time.
const MAX_CACHED = 256;
const cache = new Map<string, { schema: object; validate: ValidateFunction }>();

/**
 * Compiles a tool's JSON Schema once per distinct schema text (throws if ajv cannot compile it).
 * A `$schema` of a draft this ajv does not bundle (MCP servers often send 2020-12) would make
 * compilation fail for a keyword we do not rely on, so it is dropped.
 */
export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit.validate;
  }
  const rest = { ...schema };
  delete rest.$schema;
  const validate = ajv.compile(rest);
  cache.set(key, { schema: rest, validate });
  if (cache.size > MAX_CACHED) {
    const [oldestKey, oldest] = cache.entries().next().value!;
    cache.delete(oldestKey);
    // ajv keeps its own per-object cache of compiled schemas; release ours with it.
    ajv.removeSchema(oldest.schema);
  }
  return validate;
}

/** `/a must be number; must have required property 'b'` — what the model reads to fix its call. */
export function describeErrors(errors: ErrorObject[] | null | undefined, limit = 5): string {
  if (!errors?.length) return 'invalid';
  const parts = errors.slice(0, limit).map((e) => {
    const extra = typeof e.params.additionalProperty === 'string' ? ` (${e.params.additionalProperty})` : '';
    return `${e.instancePath ? `${e.instancePath} ` : ''}${e.message ?? 'is invalid'}${extra}`;
  });
  if (errors.length > limit) parts.push(`and ${errors.length - limit} more`);
  return parts.join('; ');
}
