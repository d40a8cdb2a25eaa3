import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the receiver got. */
export interface ReceivedHook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  /** Arrival order across the receiver (0, 1, 2…). */
  index: number;
  at: number;
}

/** How to answer a request: a status (and body, headers), optionally after a delay. */
export interface HookAnswer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

/**
 * A local webhook receiver on 127.0.0.1 (the suite's stack allows private targets): it records
 * every request, and answers as `answer` decides (200 by default), so a test can fail, delay or
 * "gone" a delivery on purpose. Loops waiting on it are bounded in time.
 */
export class WebhookReceiver {
  readonly received: ReceivedHook[] = [];
  answer: (hook: ReceivedHook) => HookAnswer = () => ({ status: 200, body: '{"ok":true}' });
  private readonly pending = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = null;
        }
        const hook: ReceivedHook = { path: req.url ?? '/', headers: req.headers, body, json, index: receiver!.received.length, at: Date.now() };
        receiver!.received.push(hook);
        const answer = receiver!.answer(hook);
        const respond = () => {
          receiver!.pending.delete(res);
          if (res.destroyed) return;
          res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
          res.end(answer.body ?? '');
        };
        receiver!.pending.add(res);
        if (answer.delayMs) setTimeout(respond, answer.delayMs).unref();
        else respond();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  /** Requests for one path (each test registers its endpoint under a path of its own). */
  at(path: string): ReceivedHook[] {
    return this.received.filter((hook) => hook.path === path);
  }

  async waitFor(what: string, predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`webhook receiver: timed out waiting for ${what} (${this.received.length} requests so far)`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async close(): Promise<void> {
    for (const res of this.pending) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
