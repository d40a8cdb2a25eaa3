export { ApiError, type FieldError } from './api-error.js';
export { errorBody, type ErrorBody } from './error-body.js';
export { ERROR_CODES, type ErrorCode, type ErrorType } from './error-codes.js';
export { AllExceptionsFilter, sendError, toApiError } from './exception.filter.js';
export { requestIdMiddleware, requestIdOf } from './request-id.js';
export { createValidationPipe, flattenValidationErrors } from './validation.js';
export { isDependencyUnavailable } from './dependency-errors.js';
