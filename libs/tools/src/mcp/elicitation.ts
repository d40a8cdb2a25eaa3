import type { ElicitRequestParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';

/** What the waitpoint keeps of an MCP server's elicitation request. */
export interface WaitpointElicitation {
  /** The MCP tool call that asked. */
  call_id: string;
  server_label: string;
  mode: 'form' | 'url';
  message: string;
  /** url mode: the page the user is asked to open (nothing is collected through the API). */
  url?: string;
  /** form mode: the flat object schema of what the server asks for (primitive properties, per the MCP spec). */
  requested_schema?: { type: 'object'; properties: Record<string, Record<string, unknown>>; required?: string[] };
}


/**
 * An MCP server's `elicitation/create` as a question waitpoint: what the user is shown and how
 * their answers become the elicitation result the server gets back. Pure: the worker derives the
 * questions when it stops the turn, the api checks and converts the answers when they arrive.
 */

/** The question every elicitation asks first: whether the user accepts, declines or cancels. */
export const ELICITATION_ACTION_QUESTION = 'action';
export const ELICITATION_ACTIONS = ['accept', 'decline', 'cancel'] as const;
export type ElicitationAction = (typeof ELICITATION_ACTIONS)[number];

export type ElicitationRequest = WaitpointElicitation;

interface FieldSchema {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  oneOf?: { const?: unknown; title?: string }[];
  items?: { enum?: unknown[]; anyOf?: { const?: unknown; title?: string }[] };
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
}

export interface ElicitationQuestion {
  question_id: string;
  question: string;
  options: string[];
  multi_select: boolean;
  allow_other: boolean;
}

/** The waitpoint's view of a server's request (form or url mode). */
export function elicitationRequest(callId: string, serverLabel: string, params: ElicitRequestParams): ElicitationRequest {
  if (params.mode === 'url') return { call_id: callId, server_label: serverLabel, mode: 'url', message: params.message, url: params.url };
  const schema = params.requestedSchema as ElicitationRequest['requested_schema'];
  return { call_id: callId, server_label: serverLabel, mode: 'form', message: params.message, requested_schema: schema };
}

/**
 * The questions of the waitpoint: the action first, then one per field of a form, in the schema's
 * order. A field with choices (enum, oneOf, boolean) offers them; a multi-select field takes an
 * array; other fields take free text, checked against the field's type when answered.
 */
export function elicitationQuestions(request: ElicitationRequest): ElicitationQuestion[] {
  const lead = request.mode === 'url' ? `${request.message}\nOpen ${request.url ?? ''} then answer accept, decline or cancel.` : request.message;
  const questions: ElicitationQuestion[] = [{ question_id: ELICITATION_ACTION_QUESTION, question: lead, options: [...ELICITATION_ACTIONS], multi_select: false, allow_other: false }];
  const required = new Set(request.requested_schema?.required ?? []);
  for (const [name, field] of fieldsOf(request)) {
    if (name === ELICITATION_ACTION_QUESTION) continue;
    const label = [field.title ?? name, field.description].filter(Boolean).join(': ');
    const hint = [required.has(name) ? 'required' : 'optional', field.type, field.format, field.default !== undefined ? `default ${JSON.stringify(field.default)}` : undefined]
      .filter(Boolean)
      .join(', ');
    const choices = choicesOf(field);
    questions.push({
      question_id: name,
      question: `${label} (${hint})`,
      options: choices ?? [],
      multi_select: field.type === 'array',
      allow_other: choices === null,
    });
  }
  return questions;
}

/** One answer of the user, as the waitpoint took it (question_id = the action or a field's name). */
export interface ElicitationAnswer {
  question_id: string;
  answer: string | string[];
}

/**
 * The elicitation result for the server from the user's answers, or what is wrong with them:
 * `decline` and `cancel` carry no content; `accept` needs every required field, each converted to
 * its schema type (numbers, integers, booleans, choices) within the schema's bounds. A field left
 * out takes the schema's default when it has one.
 */
export function elicitationResult(request: ElicitationRequest, answers: readonly ElicitationAnswer[]): { result: ElicitResult } | { errors: { field: string; message: string }[] } {
  const byId = new Map(answers.map((a) => [a.question_id, a.answer]));
  const action = byId.get(ELICITATION_ACTION_QUESTION);
  if (typeof action !== 'string' || !(ELICITATION_ACTIONS as readonly string[]).includes(action)) {
    return { errors: [{ field: ELICITATION_ACTION_QUESTION, message: `must be one of ${ELICITATION_ACTIONS.join(', ')}` }] };
  }
  const known = new Set([ELICITATION_ACTION_QUESTION, ...Object.keys(request.requested_schema?.properties ?? {})]);
  const unknown = answers.filter((a) => !known.has(a.question_id)).map((a) => a.question_id);
  if (unknown.length > 0) return { errors: unknown.map((field) => ({ field, message: 'is not a field of this request' })) };
  if (action !== 'accept') return { result: { action: action as ElicitationAction } };
  if (request.mode === 'url') return { result: { action: 'accept' } };
  const content: Record<string, string | number | boolean | string[]> = {};
  const errors: { field: string; message: string }[] = [];
  const required = new Set(request.requested_schema?.required ?? []);
  for (const [name, field] of fieldsOf(request)) {
    const answer = byId.get(name);
    if (answer === undefined || (typeof answer === 'string' && answer.trim() === '')) {
      if (field.default !== undefined) content[name] = field.default as string;
      else if (required.has(name)) errors.push({ field: name, message: 'is required' });
      continue;
    }
    const converted = convert(field, answer);
    if ('error' in converted) errors.push({ field: name, message: converted.error });
    else content[name] = converted.value;
  }
  return errors.length > 0 ? { errors } : { result: { action: 'accept', content } };
}

function fieldsOf(request: ElicitationRequest): [string, FieldSchema][] {
  return Object.entries(request.requested_schema?.properties ?? {}) as [string, FieldSchema][];
}

function choicesOf(field: FieldSchema): string[] | null {
  if (field.type === 'boolean') return ['true', 'false'];
  if (field.enum) return field.enum.map(String);
  if (field.oneOf) return field.oneOf.map((o) => String(o.const));
  if (field.items?.enum) return field.items.enum.map(String);
  if (field.items?.anyOf) return field.items.anyOf.map((o) => String(o.const));
  return null;
}

function convert(field: FieldSchema, answer: string | string[]): { value: string | number | boolean | string[] } | { error: string } {
  const choices = choicesOf(field);
  if (field.type === 'array') {
    const values = Array.isArray(answer) ? answer : [answer];
    if (choices && values.some((v) => !choices.includes(v))) return { error: `must be among ${choices.join(', ')}` };
    if (field.minItems !== undefined && values.length < field.minItems) return { error: `needs at least ${field.minItems} choices` };
    if (field.maxItems !== undefined && values.length > field.maxItems) return { error: `takes at most ${field.maxItems} choices` };
    return { value: values };
  }
  if (Array.isArray(answer)) return { error: 'takes a single answer' };
  const text = answer.trim();
  if (field.type === 'boolean') {
    if (text !== 'true' && text !== 'false') return { error: 'must be true or false' };
    return { value: text === 'true' };
  }
  if (field.type === 'number' || field.type === 'integer') {
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) return { error: `must be a ${field.type}` };
    if (field.type === 'integer' && !Number.isInteger(value)) return { error: 'must be an integer' };
    if (field.minimum !== undefined && value < field.minimum) return { error: `must be at least ${field.minimum}` };
    if (field.maximum !== undefined && value > field.maximum) return { error: `must be at most ${field.maximum}` };
    return { value };
  }
  if (choices && !choices.includes(answer)) return { error: `must be one of ${choices.join(', ')}` };
  if (field.minLength !== undefined && answer.length < field.minLength) return { error: `needs at least ${field.minLength} characters` };
  if (field.maxLength !== undefined && answer.length > field.maxLength) return { error: `takes at most ${field.maxLength} characters` };
  return { value: answer };
}

/**
 * Why a server's URL elicitation may not be shown to the user (null: it may): the link must be an
 * absolute https URL, never javascript:, data:, file: or plain http, which a client would open as is.
 */
export function elicitationUrlProblem(params: ElicitRequestParams): string | null {
  if (params.mode !== 'url') return null;
  try {
    if (new URL(params.url).protocol === 'https:') return null;
  } catch {
    // Not a URL at all: refused below.
  }
  return 'elicitation URLs must be absolute https URLs';
}
