import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { http } from './http.js';

/**
 * Validates JSON against the component schemas of the live /openapi.json with Ajv. OpenAPI 3.0
 * schemas are not quite JSON Schema: `nullable` becomes a union with null, refs to
 * `#/components/schemas/X` point at `$defs`, and annotations Ajv does not know (`example`,
 * `discriminator`, `x-…`) are dropped (a `oneOf` of members with single-value `type` enums already
 * says what the discriminator says).
 *
 * Closed: the document leaves resource objects open (clients must ignore fields they do not
 * know), but the server must send none it does not document, so every object schema that lists
 * its properties and says nothing about others is checked as `additionalProperties: false`.
 */
export class OpenApiSchemas {
  private readonly ajv = new Ajv({ allErrors: true, strict: true, validateFormats: false });
  private readonly compiled = new Map<string, ValidateFunction>();

  private constructor(readonly document: any) {
    addComponents(this.ajv, document);
  }

  static async live(): Promise<OpenApiSchemas> {
    const res = await http('/openapi.json', { key: null });
    if (res.status !== 200) throw new Error(`/openapi.json answered ${res.status}`);
    return new OpenApiSchemas(res.body);
  }

  has(name: string): boolean {
    return name in this.document.components.schemas;
  }

  /** The problems of `value` against component `name`, one line each; empty when it conforms. */
  problems(name: string, value: unknown): string[] {
    return this.problemsFor({ $ref: `#/components/schemas/${name}` }, value);
  }

  /** The same against any schema of the document (a response's, say). */
  problemsFor(schema: object, value: unknown): string[] {
    const key = JSON.stringify(schema);
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(toJsonSchema(schema));
      this.compiled.set(key, validate);
    }
    return validate(value) ? [] : (validate.errors ?? []).map(describe);
  }
}

function describe(error: ErrorObject): string {
  return `${error.instancePath || '(root)'} ${error.message ?? error.keyword} ${JSON.stringify(error.params)}`;
}

const DROPPED = new Set(['example', 'examples', 'discriminator', 'xml', 'externalDocs', 'deprecated', 'readOnly', 'writeOnly']);

/** The `$id` under which the document's component schemas are registered (`openapi#/$defs/<name>`). */
export const COMPONENTS_ID = 'openapi';

/** Registers the document's component schemas with an Ajv instance, converted by toJsonSchema. */
export function addComponents(ajv: Ajv, document: { components?: { schemas?: Record<string, unknown> } }): void {
  const defs = Object.fromEntries(Object.entries(document.components?.schemas ?? {}).map(([name, schema]) => [name, toJsonSchema(schema)]));
  ajv.addSchema({ $id: COMPONENTS_ID, $defs: defs });
}

/** One OpenAPI 3.0 schema as JSON Schema for Ajv (see OpenApiSchemas for the rules). */
export function toJsonSchema(schema: any): any {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED.has(key) || key.startsWith('x-') || key === 'nullable') continue;
    if (key === '$ref' && typeof value === 'string') out.$ref = value.replace('#/components/schemas/', `${COMPONENTS_ID}#/$defs/`);
    else if (key === 'properties') out.properties = Object.fromEntries(Object.entries(value as object).map(([name, sub]) => [name, toJsonSchema(sub)]));
    else out[key] = toJsonSchema(value);
  }
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return schema.nullable === true ? { anyOf: [out, { type: 'null' }] } : out;
}
