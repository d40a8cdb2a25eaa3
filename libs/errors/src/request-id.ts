import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Accepts a caller's X-Request-Id when it is safe to echo, otherwise mints one; every response carries it. */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.header('x-request-id');
  const id = incoming && SAFE_ID.test(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
}

export function requestIdOf(res: Response): string {
  return (res.locals.requestId as string | undefined) ?? 'req_unknown';
}
