import { ERROR_CODES, type ErrorCode } from './error-codes.js';

export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    type: string;
    retryable: boolean;
    request_id: string;
    details: Record<string, unknown>;
  };
}

export function errorBody(code: ErrorCode, message: string, requestId: string, details: Record<string, unknown> = {}): ErrorBody {
  const spec = ERROR_CODES[code];
  return { error: { code, message, type: spec.type, retryable: spec.retryable, request_id: requestId, details } };
}
