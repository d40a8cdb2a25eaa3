import type { ErrorBody, ErrorCode } from './types.js';

type ErrorDetail = ErrorBody['error'];

/**
 * An error answer of the API: its stable `code` (branch on it, never on `message`), the HTTP
 * status, whether the same request may be retried, and the request id to quote to an operator.
 */
export class AgentsApiError extends Error {
  override readonly name = 'AgentsApiError';
  readonly status: number;
  readonly code: ErrorCode;
  readonly type: ErrorDetail['type'];
  readonly retryable: boolean;
  readonly requestId: string | null;
  readonly details: ErrorDetail['details'];
  /** How long the server asked to wait (Retry-After), in milliseconds, when it said. */
  readonly retryAfter: number | null;

  constructor(status: number, error: ErrorDetail, options: { requestId?: string | null; retryAfter?: number | null } = {}) {
    super(`${status} ${error.code}: ${error.message}`);
    this.status = status;
    this.code = error.code;
    this.type = error.type;
    this.retryable = error.retryable;
    this.requestId = error.request_id ?? options.requestId ?? null;
    this.details = error.details;
    this.retryAfter = options.retryAfter ?? null;
  }
}

/**
 * The API could not be reached, or the answer was lost on the way (after the retries the call
 * allows). For a submission whose answer was lost, the SDK has already looked the receipt up;
 * retrying with the same `idempotencyKey` is safe.
 */
export class AgentsConnectionError extends Error {
  override readonly name = 'AgentsConnectionError';
  readonly idempotencyKey: string | null;

  constructor(message: string, options: { cause?: unknown; idempotencyKey?: string | null } = {}) {
    super(message, { cause: options.cause });
    this.idempotencyKey = options.idempotencyKey ?? null;
  }
}

/**
 * The response was not what the document promises (not JSON, or an error without the error
 * shape): a proxy in the way, or a wrong base URL.
 */
export class AgentsProtocolError extends Error {
  override readonly name = 'AgentsProtocolError';

  constructor(
    message: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(message);
  }
}
