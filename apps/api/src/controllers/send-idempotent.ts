import type { Response } from 'express';
import type { IdempotentResponse } from '#libs/engine';

/** Sends the stored bytes unchanged, so a replay is byte-identical to the first response. */
export function sendIdempotent(res: Response, result: IdempotentResponse): void {
  res.status(result.status);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.send(result.body);
}
