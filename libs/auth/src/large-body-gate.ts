import type { NextFunction, Request, Response } from 'express';
import { CallerSlots } from './caller-slots.js';
import type { Principal } from './principal.js';
import { DomainError, sendError } from '#libs/errors';

/** A body over this many bytes (by Content-Length) is "large": it may hold up to BODY_LIMIT in memory while parsed. */
export const LARGE_BODY_BYTES = 1024 * 1024;
/** What a refused caller is told to wait: large bodies in flight end within seconds. */
const RETRY_AFTER_S = 1;

/**
 * Large request bodies in flight, per product user: at most `max` at once (0: no limit). A body is
 * buffered whole before its route runs (inline images: up to BODY_LIMIT each), so a caller
 * starting many slow uploads at once would otherwise hold many times that in the api's memory.
 *
 * Counted per api process, on the product user behind the call (the key's owner or the token's
 * user, `actorId`): minting more keys or sending other X-End-User-Id values buys no more. The
 * check runs after authentication (a principal is known) and before the body parser reads a
 * byte (apps/api configureHttp), so a refused body is never buffered.
 */
export class LargeBodyGate {
  private readonly slots: CallerSlots;

  constructor(private readonly max: number) {
    this.slots = new CallerSlots(max);
  }

  /** How many users hold slots now (bounded by the requests in flight). */
  get size(): number {
    return this.slots.size;
  }

  /**
   * Express middleware for the routes that take large bodies. A body of unknown length (chunked)
   * counts as large: it may be. The slot is held until the response is finished or the
   * connection is gone, whichever comes first.
   */
  middleware(isLargeRoute: (req: Request) => boolean) {
    return (req: Request, res: Response, next: NextFunction): void => {
      const principal = (req as Request & { principal?: Principal }).principal;
      if (!principal || !isLargeRoute(req) || !isLargeBody(req)) return next();
      const key = principal.actorId;
      if (!this.slots.take(key)) {
        // The body is never read: close the connection after the answer rather than drain it.
        res.setHeader('Connection', 'close');
        return sendError(
          res,
          new DomainError('too_many_large_bodies', `Too many large request bodies in flight for this user (at most ${this.max} over ${LARGE_BODY_BYTES} bytes at once); retry in ${RETRY_AFTER_S} s`, {
            retry_after: RETRY_AFTER_S,
            max_in_flight: this.max,
          }),
        );
      }
      let held = true;
      const release = (): void => {
        if (!held) return;
        held = false;
        this.slots.give(key);
      };
      res.once('finish', release);
      res.once('close', release);
      next();
    };
  }
}

function isLargeBody(req: Request): boolean {
  const length = req.headers['content-length'];
  if (length === undefined) return req.headers['transfer-encoding'] !== undefined;
  return Number(length) > LARGE_BODY_BYTES;
}
