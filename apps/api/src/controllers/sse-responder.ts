import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { type Principal, RateLimits } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { EventStreamHub, type StreamPosition } from '#libs/events';
import { metrics } from '#libs/metrics';

/** A subscriber this far behind is cut off rather than buffered without bound; it resumes with its cursor. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/**
 * Serves one session stream as SSE: headers, heartbeats, fan-in from the process-wide hub, and
 * clean-up when the client goes away. Holds no database connection while streaming.
 */
@Injectable()
export class SseResponder {
  constructor(
    private readonly hub: EventStreamHub,
    private readonly limits: RateLimits,
    private readonly config: AppConfig,
  ) {}

  async stream(principal: Principal, _req: Request, res: Response, sessionId: string, after: StreamPosition | null, status = 200): Promise<void> {
    // A client that leaves while the checks below run must not leave a slot, a timer or a
    // subscription behind: 'close' fires once, so it is heard from the start.
    let gone = false;
    res.once('close', () => (gone = true));
    // Refused before the stream starts: once headers are out, a failure can only cut the stream.
    await this.hub.ping().catch(() => {
      throw new DomainError('service_unavailable', 'The event stream is unavailable right now; retry with the same Last-Event-ID');
    });
    const slot = randomUUID();
    if (!(await this.limits.acquireStream(principal, slot))) {
      res.setHeader('Retry-After', '5');
      throw new DomainError('rate_limited', 'Too many open event streams for this caller; close one, or retry later', { retry_after: 5 });
    }
    if (gone || res.destroyed) {
      await this.limits.releaseStream(principal, slot);
      return;
    }
    // No chunked framing: an SSE body simply runs until the connection closes, which saves a
    // framing step on every write of every subscriber.
    res.useChunkedEncodingByDefault = false;
    res.writeHead(status, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    res.write(': connected\n\n');
    metrics.sseOpened();

    let closed = false;
    const heartbeat = setInterval(() => {
      res.write(': ping\n\n');
      void this.limits.refreshStream(principal, slot);
    }, this.config.sseHeartbeatMs);
    const subscription = this.hub.subscribe(sessionId, after, ({ frame }) => {
      if (closed) return;
      res.write(frame);
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
    });
    // The response's close (the client left, or the stream was cut), not the request's: that one
    // fires as soon as the request body has been read.
    res.on('close', () => {
      closed = true;
      metrics.sseClosed();
      clearInterval(heartbeat);
      void this.limits.releaseStream(principal, slot);
      void subscription.then((s) => s.close()).catch(() => undefined);
    });
    await subscription.catch((error: unknown) => {
      res.destroy(error instanceof Error ? error : undefined);
    });
  }
}
