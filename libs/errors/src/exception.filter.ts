import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DomainError } from './domain-error.js';
import { isDependencyUnavailable, isTransientDatabaseError, isUniqueViolation } from './dependency-errors.js';
import { errorBody } from './error-body.js';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';
import { requestIdOf } from './request-id.js';

/**
 * Renders every failure in the one public error shape. Nest's own HttpExceptions (unknown routes,
 * framework rejections) are mapped onto catalog codes; anything else is a 500 that never leaks
 * internals to the caller but is logged with the request id.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const res = http.getResponse<Response>();
    const req = http.getRequest<Request>();
    const error = toDomainError(exception, req, this.logger);
    if (error.code === 'method_not_allowed' && !res.headersSent) res.setHeader('Allow', (error.details.allow as string[]).join(', '));
    sendError(res, error);
  }
}

/**
 * The methods the app's routes answer for this path (HEAD wherever GET is): read from the Express
 * router at the moment a request found no route, so a wrong method on a real path is a 405.
 */
function allowedMethods(req: Request): string[] {
  const app = req.app as unknown as { router?: { stack?: RouteLayer[] } } | undefined;
  const methods = new Set<string>();
  for (const layer of app?.router?.stack ?? []) {
    if (!layer.route || !layer.match(req.path)) continue;
    for (const method of Object.keys(layer.route.methods)) methods.add(method.toUpperCase());
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}

interface RouteLayer {
  route?: { methods: Record<string, boolean> };
  match(path: string): boolean;
}

/** The edge's mapping of a catalogue code to its HTTP status. */
export function httpStatusOf(code: ErrorCode): number {
  return ERROR_CODES[code].status;
}

export function sendError(res: Response, error: DomainError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  // An error that says when to retry (a limit) says it in the header too, whichever path answers it.
  if (typeof error.details.retry_after === 'number') res.setHeader('Retry-After', String(error.details.retry_after));
  res.status(httpStatusOf(error.code)).json(errorBody(error.code, error.message, requestIdOf(res), error.details));
}

export function toDomainError(exception: unknown, req: Request, logger: Logger): DomainError {
  if (exception instanceof DomainError) return exception;
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const code = HTTP_STATUS_CODES[status];
    if (status === 404) {
      const allow = allowedMethods(req);
      if (allow.length > 0 && !allow.includes(req.method)) return new DomainError('method_not_allowed', `${req.method} is not allowed on ${req.path}`, { allow });
      return new DomainError('route_not_found', `No route for ${req.method} ${req.path}`);
    }
    if (code) return new DomainError(code, exception.message);
  }
  const bodyParserError = exception as { type?: string; status?: number } | null;
  if (bodyParserError?.type === 'entity.too.large') return new DomainError('payload_too_large', 'Request body is too large');
  if (bodyParserError?.type === 'entity.parse.failed') return new DomainError('invalid_json', 'Request body is not valid JSON');
  if (bodyParserError?.type === 'encoding.unsupported' || bodyParserError?.type === 'charset.unsupported') {
    return new DomainError('unsupported_media_type', 'Unsupported request body encoding');
  }
  if (isDependencyUnavailable(exception)) {
    logger.error(`dependency unavailable on ${req.method} ${req.path}: ${String(exception)}`);
    return new DomainError('service_unavailable', 'A backing service is unavailable; retry later');
  }
  if (isTransientDatabaseError(exception)) {
    logger.warn(`transient database conflict on ${req.method} ${req.path}: ${String(exception)}`);
    return new DomainError('service_unavailable', 'The request collided with a concurrent one; retry it with the same Idempotency-Key');
  }
  if (isUniqueViolation(exception)) {
    logger.warn(`unique violation on ${req.method} ${req.path}: ${String(exception)}`);
    return new DomainError('state_conflict', 'The request conflicts with a concurrent change; read the resource and retry');
  }
  logger.error(`unhandled error on ${req.method} ${req.path}`, exception instanceof Error ? exception.stack : String(exception));
  return new DomainError('internal_error', 'Internal server error');
}

const HTTP_STATUS_CODES: Record<number, ErrorCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'validation_failed',
  503: 'service_unavailable',
};

