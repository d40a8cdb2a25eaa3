import { Ajv, type ValidateFunction } from 'ajv';
import { addComponents, toJsonSchema } from '../openapi-schema.js';

// The OpenAPI document as the fuzzer reads it: its operations, their parameters and bodies, and a
// checker of responses against what each operation declares.

export type Schema = Record<string, any>;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Schema;
}

export interface ResponseSpec {
  content?: Record<string, { schema?: Schema }>;
  headers?: Record<string, unknown>;
}

export interface Operation {
  method: string;
  /** The path template, `/api/v1/agents/sessions/{session_id}`. */
  path: string;
  /** `POST /api/v1/agents/sessions`, for messages. */
  name: string;
  parameters: Parameter[];
  /** The JSON request body's schema, null when the operation takes none. */
  body: Schema | null;
  /** The multipart/form-data request body's schema (an upload), null when the operation takes none. */
  multipart: Schema | null;
  /** The request body examples of the document: known-good bodies to start from. */
  bodyExamples: unknown[];
  responses: Record<string, ResponseSpec>;
  /** Answers with text/event-stream (the session stream) on success. */
  streams: boolean;
}

interface Document {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, Schema> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export function operationsOf(document: Document): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const responses = operation.responses as Record<string, ResponseSpec>;
      const json = operation.requestBody?.content?.['application/json'];
      operations.push({
        method: method.toUpperCase(),
        path,
        name: `${method.toUpperCase()} ${path}`,
        parameters: ((operation.parameters ?? []) as Parameter[]).map((p) => ({ name: p.name, in: p.in, required: p.required === true, schema: p.schema ?? {} })),
        body: json?.schema ?? null,
        multipart: operation.requestBody?.content?.['multipart/form-data']?.schema ?? null,
        bodyExamples: [...(json?.example !== undefined ? [json.example] : []), ...Object.values<{ value?: unknown }>(json?.examples ?? {}).flatMap((e) => (e.value !== undefined ? [e.value] : []))],
        responses,
        streams: Object.values(responses).some((r) => r.content?.['text/event-stream'] !== undefined && Object.keys(r.content).length >= 1),
      });
    }
  }
  return operations;
}

/** The media type without parameters: `application/json; charset=utf-8` → `application/json`. */
export function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Checks a response against the operation's declaration: status, media type and JSON schema. */
export class ResponseChecker {
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(document: Document) {
    this.ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
    this.ajv.addFormat('date-time', (value: string) => !Number.isNaN(Date.parse(value)) && /^\d{4}-\d\d-\d\dT/.test(value));
    this.ajv.addFormat('uri', (value: string) => URL.canParse(value));
    addComponents(this.ajv, document);
  }

  /** What is wrong with this response for this operation; empty when it conforms. */
  check(operation: Operation, status: number, contentType: string | null, body: string): string[] {
    const declared = operation.responses[String(status)];
    if (!declared) return [`status ${status} is not declared (declared: ${Object.keys(operation.responses).join(', ')})`];
    const type = mediaType(contentType);
    const content = declared.content ?? {};
    if (body === '' && type === '') return Object.keys(content).length > 0 && status !== 204 ? ['an empty response where content is declared'] : [];
    if (Object.keys(content).length > 0 && !(type in content)) return [`Content-Type ${type || '(none)'} is not declared for ${status} (declared: ${Object.keys(content).join(', ')})`];
    if (type !== 'application/json') return [];
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      return ['the body is not JSON although its Content-Type says so'];
    }
    const schema = content[type]?.schema;
    if (!schema) return [];
    const validate = this.validator(`${operation.name} ${status}`, schema);
    if (validate(json)) return [];
    return (validate.errors ?? []).slice(0, 5).map((e) => `body${e.instancePath} ${e.message}${e.params && 'allowedValues' in e.params ? ` ${JSON.stringify(e.params.allowedValues)}` : ''}`);
  }

  private validator(key: string, schema: Schema): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(toJsonSchema(schema) as Schema);
      this.compiled.set(key, validate);
    }
    return validate;
  }
}
