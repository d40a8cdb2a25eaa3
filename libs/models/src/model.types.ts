/** The provider-neutral view of one model call. */
export interface ModelMessage {
  role: 'user' | 'assistant';
  text: string;
}

export interface ModelRequest {
  /** The model name after `provider:`. */
  model: string;
  instructions: string;
  messages: ModelMessage[];
  signal: AbortSignal;
}

export type ModelEvent = { type: 'text_delta'; delta: string };

export interface ModelProvider {
  readonly provider: string;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

/** A model call that failed; `code` becomes the run's and turn's error code. */
export class ModelError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}
