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
/** On shutdown each client is told (SSE `retry:`) to reconnect after this long, to another replica. */
export const SHUTDOWN_RETRY_MS = 1_000;
/** How long ended streams get to flush and release their slots before they are cut. */
const END_TIMEOUT_MS = 3_000;

interface OpenStream {
  res: Response;
  /** Settles once the response closed and its slot and subscription were released. */
  released: Promise<void>;
}

/**
 * Serves one session stream as SSE: headers, heartbeats, fan-in from the process-wide hub, and
 * clean-up when the client goes away. Holds no database connection while streaming. Keeps the
 * open streams, so that shutdown can end each one cleanly (`endAll`).
 */
@Injectable()
export class SseResponder {
  private readonly open = new Set<OpenStream>();
  private closing = false;

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
    this.refuseWhileClosing(res);
    await this.hub.ping().catch(() => {
      throw new DomainError('service_unavailable', 'The event stream is unavailable right now; retry with the same Last-Event-ID');
    });
    const slot = randomUUID();
    if (!(await this.limits.acquireStream(principal, slot))) {
      res.setHeader('Retry-After', '5');
      throw new DomainError('rate_limited', 'Too many open event streams for this caller; close one, or retry later', { retry_after: 5 });
    }
    if (gone || res.destroyed || this.closing) {
      await this.limits.releaseStream(principal, slot);
      if (gone || res.destroyed) return;
      this.refuseWhileClosing(res);
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

    // Closed, or ended by shutdown (nothing may be written after the end).
    let closed = false;
    const heartbeat = setInterval(() => {
      if (res.writableEnded) return;
      res.write(': ping\n\n');
      void this.limits.refreshStream(principal, slot);
    }, this.config.sseHeartbeatMs);
    const subscription = this.hub.subscribe(sessionId, after, ({ frame }) => {
      if (closed || res.writableEnded) return;
      res.write(frame);
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
    });
    let released: () => void = () => undefined;
    const entry: OpenStream = { res, released: new Promise<void>((resolve) => (released = resolve)) };
    this.open.add(entry);
    // The response's close (the client left, or the stream was cut), not the request's: that one
    // fires as soon as the request body has been read.
    res.on('close', () => {
      closed = true;
      metrics.sseClosed();
      clearInterval(heartbeat);
      this.open.delete(entry);
      void Promise.allSettled([this.limits.releaseStream(principal, slot), subscription.then((s) => s.close())]).then(() => released());
    });
    await subscription.catch((error: unknown) => {
      res.destroy(error instanceof Error ? error : undefined);
    });
  }

  openStreams(): number {
    return this.open.size;
  }

  /**
   * Shutdown: refuses new streams, tells every open one to reconnect (`retry:`, so clients come
   * back after SHUTDOWN_RETRY_MS, to another replica, with their Last-Event-ID) and ends it; waits
   * until each closed and released its slot, bounded: a client that does not read is cut.
   * Returns how many streams were ended.
   */
  async endAll(retryMs = SHUTDOWN_RETRY_MS, timeoutMs = END_TIMEOUT_MS): Promise<number> {
    this.closing = true;
    const streams = [...this.open];
    for (const { res } of streams) {
      if (!res.writableEnded && !res.destroyed) res.end(`: server shutting down; reconnect\nretry: ${retryMs}\n\n`);
    }
    const all = Promise.all(streams.map((stream) => stream.released));
    if (!(await settlesWithin(all, timeoutMs))) {
      for (const { res } of streams) if (!res.destroyed) res.destroy();
      // Destroyed responses close at once; a slot whose release hangs expires in Redis.
      await settlesWithin(all, timeoutMs);
    }
    return streams.length;
  }

  private refuseWhileClosing(res: Response): void {
    if (!this.closing) return;
    res.setHeader('Retry-After', String(Math.ceil(SHUTDOWN_RETRY_MS / 1000)));
    throw new DomainError('service_unavailable', 'This server is shutting down; reconnect with the same Last-Event-ID');
  }
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return settled;
}
