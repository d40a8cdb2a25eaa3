import v8 from 'node:v8';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

// A schema's `pattern` (and `patternProperties`) comes from an agent's owner or an MCP server and
// is tested against what a model wrote: on V8's backtracking engine `^(a+)+$` holds the event loop
// for minutes on a few dozen characters. V8's linear-time engine (the `l` flag, behind this flag;
// setting it at run time is allowed and affects only regexps created with `l`) runs every pattern
// it accepts in time linear in the input.
v8.setFlagsFromString('--enable-experimental-regexp-engine');

/**
 * Compiles a schema pattern for the linear engine, or throws saying why it cannot run there.
 * JSON Schema patterns are Unicode regexps, but on Node 20 the linear engine has no Unicode mode:
 * a pattern is checked with `u` (the syntax ajv always required), then run without it, which is
 * the same match for every pattern that needs no Unicode mode (`\p{…}`, `\u{…}`, characters
 * beyond the BMP: those are refused rather than silently read as other characters). The engine
 * also refuses backreferences, lookaround and repetition counts above 16.
 */
function linearRegExp(pattern: string, flags: string): RegExp {
  new RegExp(pattern, flags);
  if (/\\[pPu]\{|[\ud800-\udfff]/.test(pattern)) throw new Error(`pattern "${pattern}" needs Unicode mode, which the linear-time regexp engine cannot run`);
  try {
    return new RegExp(pattern, `${flags.replace('u', '')}l`);
  } catch {
    throw new Error(`pattern "${pattern}" cannot be run in linear time (backreferences, lookaround and repetition counts above 16 are not supported)`);
  }
}
linearRegExp.code = 'linearRegExp';

// One instance for every tool schema. `addUsedSchema: false` keeps two agents' schemas that share
// an `$id` from colliding; formats are not validated because no format plugin is loaded (and the
// model gets a readable error for structure, which is what matters); `logger: false` keeps
// non-strict warnings about foreign keywords out of the worker's log. Patterns run on the linear engine.
const ajv = new Ajv({ strict: false, allErrors: true, addUsedSchema: false, validateFormats: false, logger: false, code: { regExp: linearRegExp } });

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

/**
 * The MCP SDK's schema validator (tool output schemas, in our connector and inside its Client) on
 * an Ajv whose patterns run on the linear engine: a server's `outputSchema` is as hostile as any
 * input. A schema this cannot compile (a pattern the engine cannot run) is not checked, as an MCP
 * tool's input schema is not (validateToolArguments): the server's output is taken as it is, where
 * the SDK's default would have backtracked on it or refused to list the server's tools.
 * Formats are not validated (no format plugin is loaded here; the SDK's default checked them).
 */
export class LinearSchemaValidator implements jsonSchemaValidator {
  private readonly ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, validateSchema: false, logger: false, code: { regExp: linearRegExp } });

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let validate: ValidateFunction;
    try {
      validate = this.ajv.compile(schema);
    } catch {
      return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
    }
    return (input) =>
      validate(input) ? { valid: true, data: input as T, errorMessage: undefined } : { valid: false, data: undefined, errorMessage: this.ajv.errorsText(validate.errors) };
  }
}
