import type { ErrorCode } from './error-codes.js';

/**
 * The one error type domain code throws: a stable catalogue `code`, a message and details, and no
 * transport. The api's exception filter maps the code to its HTTP status at the edge
 * (`httpStatusOf`); the worker never needs one.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }

  static notFound(what: string): DomainError {
    return new DomainError('not_found', `${what} not found`);
  }

  static validation(fields: FieldError[]): DomainError {
    const first = fields[0];
    const message = first ? `Invalid request: ${first.field}: ${first.errors[0]}` : 'Invalid request';
    return new DomainError('validation_failed', message, { fields });
  }
}

export interface FieldError {
  field: string;
  errors: string[];
}
