import type { INestApplication } from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import { ApiError, createValidationPipe, requestIdMiddleware, sendError } from '#libs/errors';

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
      return sendError(res, new ApiError('unsupported_media_type', 'Send the request body as application/json'));
    }
    return (LARGE_BODY_ROUTE.test(req.path) ? large : small)(req, res, next);
  });
  app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const type = (error as { type?: string } | null)?.type;
    if (type === 'entity.too.large') return sendError(res, new ApiError('payload_too_large', `Request body exceeds the limit`));
    if (type === 'entity.parse.failed') return sendError(res, new ApiError('invalid_json', 'Request body is not valid JSON'));
    return next(error);
  });
  app.useGlobalPipes(createValidationPipe());
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}
