/** A tool call the model asked for: `arguments` is the JSON string the model produced (maybe invalid). */
export interface ModelToolCall {
  call_id: string;
  name: string;
  arguments: string;
}

/**
 * A part of a user message with images: text, or an image as a `data:` URL; `width` and `height`
 * (pixels, as sent) once the worker measured it for the request (see libs/runtime model-images).
 */
export type ModelUserPart = { type: 'text'; text: string } | { type: 'image'; url: string; width?: number; height?: number };

/**
 * The provider-neutral view of one conversation entry. A user message with images also has
 * `parts`, in the order the user wrote them; `text` is its text alone (what text-only models see).
 */
export type ModelMessage =
  /** `toolImages`: added by the service after a step's tool outputs to show the images the tools returned (no person wrote it). */
  | { role: 'user'; text: string; parts?: ModelUserPart[]; toolImages?: true }
  | { role: 'assistant'; text: string; tool_calls?: ModelToolCall[] }
  | { role: 'tool'; call_id: string; output: string };

/** A tool offered to the model (JSON Schema parameters). */
export interface ModelTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  /** The model name after `provider:`. */
  model: string;
  instructions: string;
  messages: ModelMessage[];
  tools: ModelTool[];
  signal: AbortSignal;
  /**
   * `compaction`: the call summarises a conversation (the context manager's); providers send it as
   * any other call, the scripted model answers it with its deterministic summariser.
   */
  purpose?: 'compaction';
}

export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  /** Part of input_tokens: served from the provider's prompt cache. */
  cached_tokens: number;
  /** Part of output_tokens: spent reasoning, where the provider reports it. */
  reasoning_tokens?: number;
  total_tokens: number;
}

/**
 * What a model call streams: text and reasoning deltas as they come, each tool call once it is
 * complete (arguments fully assembled), usage and the finish reason at most once each (at the end).
 */
export type ModelEvent =
  | { type: 'text_delta'; delta: string }
  | { type: 'reasoning_delta'; delta: string }
  | { type: 'tool_call'; call: ModelToolCall }
  | { type: 'usage'; usage: ModelUsage }
  /**
   * Why the model stopped, as the provider says it (`stop`, `length`, `tool_calls`, `content_filter`, …);
   * `id` and `model`: the response's id and the model that answered, where the provider names them (trace attributes).
   */
  | { type: 'finish'; reason: string; id?: string; model?: string };

export interface ModelProvider {
  readonly provider: string;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
  /**
   * The exact request `stream` sends for `request`, as JSON (its body: never headers or
   * credentials), for the model-request audit. A provider without one is recorded as the
   * provider-neutral request it is given (`neutralRequestBody`).
   */
  requestBody?(request: ModelRequest): object;
}

/** The request `provider` sends for `request`, as the audit records it. */
export function requestBodyOf(provider: ModelProvider, request: ModelRequest): object {
  return provider.requestBody?.(request) ?? neutralRequestBody(request);
}

/** What a provider with no wire format of its own (the scripted model) is given: model, instructions, messages, tools. */
export function neutralRequestBody({ model, instructions, messages, tools, purpose }: Omit<ModelRequest, 'signal'>): object {
  return { model, instructions, messages, tools, ...(purpose ? { purpose } : {}) };
}

/** Stable provider error codes (the run's and turn's error code when a model call fails for good). */
export const MODEL_ERROR_CODES = [
  'model_rate_limited',
  'model_timeout',
  'model_context_length_exceeded',
  'model_auth_failed',
  'model_bad_request',
  'model_unavailable',
] as const;

/**
 * A model call that failed; `code` becomes the run's and turn's error code. `retryable` calls are
 * retried inside the run (see retry-policy); `retryAfterMs` is the provider's Retry-After, if any.
 */
export class ModelError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryable = false,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}
