import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/** The one exception type the services throw; the filter renders it in the public error shape. */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_CODES[code].status;
  }

  static notFound(what: string): ApiError {
    return new ApiError('not_found', `${what} not found`);
  }

  static validation(fields: FieldError[]): ApiError {
    const first = fields[0];
    const message = first ? `Invalid request: ${first.field}: ${first.errors[0]}` : 'Invalid request';
    return new ApiError('validation_failed', message, { fields });
  }
}

export interface FieldError {
  field: string;
  errors: string[];
}
