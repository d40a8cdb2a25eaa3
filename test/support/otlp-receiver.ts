import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { decodeJsonRequest, decodeProtobufRequest, type ReceivedSpan } from './otlp-wire.js';

export { OTLP_KIND, OTLP_STATUS, type ReceivedSpan } from './otlp-wire.js';

/**
 * An in-process OTLP/HTTP trace receiver (a collector's front door, nothing behind it): POST
 * /v1/traces on 127.0.0.1 with application/x-protobuf (decoded by test/support/otlp-wire.ts's own
 * wire reader) or application/json, answered 200 with an empty ExportTraceServiceResponse. The
 * processes under test export to it when OTEL_EXPORTER_OTLP_ENDPOINT is its `endpoint`.
 */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: OTEL_EXPORTER_OTLP_ENDPOINT (the exporters add /v1/traces). */
  endpoint: string;
  port: number;
  /** Every span received, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** One entry per accepted export request. */
  readonly requests: { protocol: 'protobuf' | 'json'; spans: number }[];
  /** Requests refused (wrong path, type or an undecodable body): a test asserts there are none. */
  readonly errors: string[];
  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[];
  /**
   * Waits (bounded: `timeoutMs`, default 30 s) until at least `count` (default 1) received spans
   * satisfy `predicate`; returns them. On timeout it throws, naming what was received.
   */
  waitForSpans(predicate: (span: ReceivedSpan) => boolean, options?: { timeoutMs?: number; count?: number; what?: string }): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/** An export request is bounded as a collector bounds it (the SDK's batches are far smaller). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export async function startOtlpReceiver(options: { port?: number } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const errors: string[] = [];
  const sockets = new Set<Socket>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.url?.split('?')[0] !== '/v1/traces') return refuse(res, 404, `no route ${req.method} ${req.url}`);
    if (req.method !== 'POST') return refuse(res, 405, `${req.method} /v1/traces`);
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    let body = await readBody(req);
    const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding === 'gzip') body = gunzipSync(body, { maxOutputLength: MAX_BODY_BYTES });
    else if (encoding !== 'identity') return refuse(res, 415, `content-encoding ${encoding}`);
    if (type === 'application/x-protobuf') {
      const decoded = decodeProtobufRequest(body);
      spans.push(...decoded);
      requests.push({ protocol: 'protobuf', spans: decoded.length });
      // An empty ExportTraceServiceResponse: no fields, no bytes.
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' }).end();
      return;
    }
    if (type === 'application/json') {
      const decoded = decodeJsonRequest(JSON.parse(body.toString('utf8')));
      spans.push(...decoded);
      requests.push({ protocol: 'json', spans: decoded.length });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    return refuse(res, 415, `content-type ${type || '(none)'}`);
  }

  function refuse(res: ServerResponse, status: number, why: string): void {
    errors.push(`${status}: ${why}`);
    res.writeHead(status, { 'content-type': 'text/plain' }).end(why);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      errors.push(`400: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' }).end('undecodable request');
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    spans,
    requests,
    errors,
    trace: (traceId) => spans.filter((span) => span.traceId === traceId),
    async waitForSpans(predicate, { timeoutMs = 30_000, count = 1, what = 'spans' } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = spans.filter(predicate);
        if (found.length >= count) return found;
        if (Date.now() >= deadline) {
          const names = [...new Set(spans.map((span) => `${span.serviceName}/${span.name}`))].slice(0, 40).join(', ');
          throw new Error(`otlp receiver: ${found.length} of ${count} ${what} within ${timeoutMs} ms (${spans.length} spans received: ${names}; errors: ${errors.join('; ') || 'none'})`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.destroy();
        reject(new Error(`request body over ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Bytes as 32/16 lowercase hex, for ids a test makes up (a client's traceparent). */
export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/**
 * The span id the contract gives a run's `invoke_agent` (a fresh claim's; a takeover links to it):
 * the first 16 hex of sha256('invoke_agent:' + runId). Computed here on its own, not imported from
 * libs/telemetry, so the tests hold the implementation to the contract.
 */
export function runSpanIdOf(runId: string): string {
  return createHash('sha256').update(`invoke_agent:${runId}`).digest('hex').slice(0, 16);
}
