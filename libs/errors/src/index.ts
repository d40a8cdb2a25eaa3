export { DomainError, type FieldError } from './domain-error.js';
export { errorBody, type ErrorBody } from './error-body.js';
export { ERROR_CODES, type ErrorCode, type ErrorType } from './error-codes.js';
export { AllExceptionsFilter, httpStatusOf, sendError, toDomainError } from './exception.filter.js';
export { requestIdMiddleware, requestIdOf } from './request-id.js';
export { createValidationPipe, flattenValidationErrors, OptionalNotNull } from './validation.js';
export { isDependencyUnavailable, isTransientDatabaseError, isUniqueViolation, STORAGE_UNAVAILABLE } from './dependency-errors.js';
export { FAILURE_SIDE_EFFECTS, type FailureSideEffects, failureRetryable, isTransientFailure, TURN_FAILURE_CODES, type TurnFailureCode } from './turn-failures.js';
