import type { INestApplication } from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import { DomainError, createValidationPipe, requestIdMiddleware, sendError } from '#libs/errors';

/** Large bodies are accepted only where inline images travel: session create and event submission. */
const LARGE_BODY_ROUTE = /^\/api\/v1\/agents\/sessions(\/[^/]+\/events)?\/?$/;

/**
 * HTTP concerns shared by the real server and tests: request ids first, JSON parsing with
 * per-route limits whose failures use the public error shape, and the validation pipe.
 */
export function configureHttp(app: INestApplication, bodyLimit: string): void {
  app.use(requestIdMiddleware);
  const large = express.json({ limit: bodyLimit });
  const small = express.json({ limit: '1mb' });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (hasBody(req) && !req.is('application/json')) {
      return sendError(res, new DomainError('unsupported_media_type', 'Send the request body as application/json'));
    }
    return (LARGE_BODY_ROUTE.test(req.path) ? large : small)(req, res, next);
  });
  // Postgres text and jsonb cannot hold U+0000; reject it here as a field error rather than fail the write.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const field = nulFieldPath(req.body as unknown, '');
    if (field === null) return next();
    return sendError(res, DomainError.validation([{ field: field || 'body', errors: ['must not contain the NUL character (U+0000)'] }]));
  });
  app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const type = (error as { type?: string } | null)?.type;
    if (type === 'entity.too.large') return sendError(res, new DomainError('payload_too_large', `Request body exceeds the limit`));
    if (type === 'entity.parse.failed') return sendError(res, new DomainError('invalid_json', 'Request body is not valid JSON'));
    return next(error);
  });
  app.useGlobalPipes(createValidationPipe());
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

function nulFieldPath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (const [index, entry] of value.entries()) {
      const found = nulFieldPath(entry, `${path}[${index}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, entry] of Object.entries(value)) {
      const found = nulFieldPath(key, path) ?? nulFieldPath(entry, path ? `${path}.${key}` : key);
      if (found !== null) return found;
    }
  }
  return null;
}
