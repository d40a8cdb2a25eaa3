import type { Server } from 'node:http';
import { type BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { SHUTDOWN_RETRY_MS, SseResponder } from './controllers/sse-responder.js';

/** In-flight requests get this long to finish after SIGTERM; then their connections are cut. */
export const SHUTDOWN_DRAIN_MS = 10_000;
const DRAIN_POLL_MS = 50;

/**
 * Graceful api shutdown, before Nest closes the HTTP server and, after it, the database and Redis
 * (so what is still in flight can finish): stop accepting connections, end every SSE stream with a
 * `retry:` (clients reconnect to another replica), then drain — requests in flight finish,
 * keep-alive connections are closed as soon as they are idle, and responses carry
 * `Connection: close` — for at most SHUTDOWN_DRAIN_MS, after which the rest are cut.
 */
@Injectable()
export class HttpDrain implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Shutdown');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly sse: SseResponder,
  ) {}

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    const t0 = Date.now();
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    const listening = server?.listening === true;
    if (server && listening) {
      // Stops listening (new connections are refused) and, since Node 19, closes idle keep-alive connections.
      server.close();
      server.prependListener('request', (_req, res) => {
        if (!res.headersSent) res.setHeader('Connection', 'close');
      });
    }
    const streams = await this.sse.endAll(SHUTDOWN_RETRY_MS);
    const left = server && listening ? await drain(server, t0 + SHUTDOWN_DRAIN_MS) : 0;
    this.logger.log(
      `${signal ?? 'close'}: stopped accepting connections, ended ${streams} event stream(s) (clients reconnect after ${SHUTDOWN_RETRY_MS} ms), ` +
        (left === 0 ? `drained in ${Date.now() - t0} ms` : `cut ${left} connection(s) still open after ${SHUTDOWN_DRAIN_MS} ms`),
    );
  }
}

/** Waits until no connection is open, closing idle ones as they appear; returns how many were cut at the deadline. */
async function drain(server: Server, deadline: number): Promise<number> {
  for (;;) {
    const open = await connections(server);
    if (open === 0) return 0;
    if (Date.now() >= deadline) {
      server.closeAllConnections();
      return open;
    }
    server.closeIdleConnections();
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
  }
}

function connections(server: Server): Promise<number> {
  return new Promise((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count)));
}
