import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AuthInvalidations, type InvalidationTarget, type Principal, RateLimits } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { EventStreamHub, type StreamPosition, type SubscribeResult } from '#libs/events';
import { metrics } from '#libs/metrics';

/** On shutdown each client is told (SSE `retry:`) to reconnect after this long, to another replica. */
export const SHUTDOWN_RETRY_MS = 1_000;
/** The `retry:` of a stream ended because its credential changed: the client comes back at once, with or without access. */
const CREDENTIALS_RETRY_MS = 1_000;
/** A client cut for reading too slowly is told to come back after this long, with its Last-Event-ID. */
export const SLOW_READER_RETRY_MS = 1_000;
/** How long ended streams get to flush and release their slots before they are cut. */
const END_TIMEOUT_MS = 3_000;
/**
 * How long a stream cut for reading too slowly may take to drain its backlog and the `retry:` hint:
 * a client that reads again gets them and closes cleanly; one that never does is destroyed then, so
 * its buffered bytes are held no longer (it resumes from the last event it did read).
 */
const SLOW_READER_GRACE_MS = 10_000;
const PING = Buffer.from(': ping\n\n');

/**
 * One open event stream. A small object with no closure or timer of its own: the responder's one
 * heartbeat timer pings every stream, and the hub's fan-out calls `write` with bytes that are
 * shared by every subscriber of the batch.
 */
class OpenStream {
  /** Closed, cut or ended: nothing more is written. */
  done = false;
  subscription: SubscribeResult | null = null;
  /** Settles once the response closed and its slot and subscription were released. */
  readonly released: Promise<void>;
  release: () => void = () => undefined;
  cutTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly res: Response,
    /**
     * Written to directly when the response owns it (the headers are out): the bytes on the wire
     * are what `res.write` would send (the body is neither chunked nor compressed), without its
     * per-write bookkeeping and next-tick uncork, which the profile showed on every subscriber of
     * every event. Null for a response queued behind another on a pipelined connection: it
     * writes through `res` (which buffers it in order).
     */
    private readonly socket: Socket | null,
    readonly principal: Principal,
    readonly slot: string,
    private readonly maxBuffered: number,
  ) {
    this.released = new Promise<void>((resolve) => (this.release = resolve));
  }

  /** The hub's sink: called once per read batch with the batch's bytes (one write, one syscall). */
  readonly write = (bytes: Buffer): void => {
    if (this.done || this.res.writableEnded) return;
    // Backpressure: bytes still waiting here (the kernel's socket buffers are full) mean the client
    // reads slower than events come. Past the bound it is cut before this write, so a lone event
    // larger than the bound still goes out (the client always makes progress) and what waits is
    // at most the bound plus one batch.
    if ((this.socket ?? this.res).writableLength > this.maxBuffered) {
      this.cut();
      return;
    }
    if (this.socket) this.socket.write(bytes);
    else this.res.write(bytes);
  };

  /**
   * The hub's pace between catch-up pages: at once while little waits, else when the client has
   * read what waits (or left), at most SLOW_READER_GRACE_MS; the next write then cuts it if it is
   * still behind.
   */
  readonly paced = (): Promise<void> => {
    const target = this.socket ?? this.res;
    if (this.done || target.writableLength <= this.maxBuffered) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        target.off('drain', done);
        target.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, SLOW_READER_GRACE_MS);
      target.once('drain', done);
      target.once('close', done);
    });
  };

  ping(): void {
    if (this.done || this.res.writableEnded) return;
    if (this.socket) this.socket.write(PING);
    else this.res.write(PING);
  }

  /**
   * Ends a stream whose client fell behind: no more events, a `retry:` hint after what is already
   * buffered, and the client resumes from the last event it read (every frame carries its `id:`).
   * Nothing is queued for it past this point; the subscription goes at once.
   */
  private cut(): void {
    this.done = true;
    metrics.sseSlowReaderCut();
    this.subscription?.close();
    this.subscription = null;
    this.res.end(`: too far behind; reconnect with Last-Event-ID\nretry: ${SLOW_READER_RETRY_MS}\n\n`);
    this.cutTimer = setTimeout(() => this.res.destroy(), SLOW_READER_GRACE_MS);
    this.cutTimer.unref();
  }
}

/**
 * Serves one session stream as SSE: headers, heartbeats, fan-in from the process-wide hub, and
 * clean-up when the client goes away. Holds no database connection while streaming. Keeps the
 * open streams, so that shutdown can end each one cleanly (`endAll`), and heartbeats them all with
 * one timer (which also keeps their slots alive in one Redis call per principal).
 */
@Injectable()
export class SseResponder implements OnModuleDestroy {
  private readonly open = new Set<OpenStream>();
  private closing = false;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly hub: EventStreamHub,
    private readonly limits: RateLimits,
    private readonly config: AppConfig,
    invalidations: AuthInvalidations,
  ) {
    invalidations.onInvalidated((target) => this.endFor(target));
  }

  /**
   * A stream is as good as the credential that opened it: when a key is revoked, or its user is
   * suspended or changes role, the streams opened with it end with a `retry:` hint. A client whose
   * credentials still hold resumes from its Last-Event-ID, losing nothing; the others get 401.
   */
  private endFor(target: InvalidationTarget): void {
    for (const stream of this.open) {
      const { principal, res } = stream;
      const opened = 'keyId' in target ? principal.keyId === target.keyId : principal.actorId === target.userId || principal.userId === target.userId;
      if (!opened || stream.done || res.writableEnded || res.destroyed) continue;
      stream.done = true;
      stream.subscription?.close();
      stream.subscription = null;
      res.end(`: credentials changed; reconnect\nretry: ${CREDENTIALS_RETRY_MS}\n\n`);
    }
  }

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
      throw new DomainError('rate_limited', 'Too many open event streams for this caller; close one, or retry later', { retry_after: 5 });
    }
    if (gone || res.destroyed || this.closing) {
      await this.limits.releaseStream(principal, slot);
      if (gone || res.destroyed) return;
      this.refuseWhileClosing(res);
    }
    // No chunked framing: an SSE body simply runs until the connection closes, which saves a
    // framing step on every write of every subscriber (and lets frames go to the socket as they are).
    res.useChunkedEncodingByDefault = false;
    res.writeHead(status, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      // no-store as every API response (the events are one caller's); no-transform keeps proxies from buffering or compressing.
      'Cache-Control': 'no-store, no-transform',
      'X-Accel-Buffering': 'no',
    });
    // Through the response: this first write sends the headers, so the socket is ours after it.
    res.write(': connected\n\n');
    metrics.sseOpened();

    const socket = res.socket !== null && (res.socket as Socket & { _httpMessage?: unknown })._httpMessage === res ? res.socket : null;
    const stream = new OpenStream(res, socket, principal, slot, this.config.sseMaxBufferedBytes);
    this.open.add(stream);
    this.startHeartbeat();
    // The response's close (the client left, or the stream was cut), not the request's: that one
    // fires as soon as the request body has been read.
    res.on('close', () => this.closed(stream));
    let subscription: SubscribeResult;
    try {
      subscription = await this.hub.subscribe(sessionId, after, stream.write, stream.paced);
    } catch (error) {
      res.destroy(error instanceof Error ? error : undefined);
      return;
    }
    // Closed (or cut) while catching up: the subscription is not kept.
    if (stream.done) subscription.close();
    else stream.subscription = subscription;
  }

  private closed(stream: OpenStream): void {
    stream.done = true;
    clearTimeout(stream.cutTimer);
    metrics.sseClosed();
    this.open.delete(stream);
    if (this.open.size === 0) this.stopHeartbeat();
    stream.subscription?.close();
    stream.subscription = null;
    void this.limits.releaseStream(stream.principal, stream.slot).finally(() => stream.release());
  }

  /**
   * One timer for every open stream (none while there is none): a comment on each, then their
   * slots refreshed in one Redis call per principal. Each stream hears one within every
   * SSE_HEARTBEAT_MS, as with a timer of its own.
   */
  private startHeartbeat(): void {
    if (this.heartbeat !== null) return;
    this.heartbeat = setInterval(() => {
      for (const stream of this.open) stream.ping();
      void this.limits.refreshStreams(this.open);
    }, this.config.sseHeartbeatMs);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  onModuleDestroy(): void {
    this.stopHeartbeat();
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
