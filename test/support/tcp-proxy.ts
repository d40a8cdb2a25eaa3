import net from 'node:net';

/** A request as the proxy saw it go by (the head only). */
export interface SeenRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The status line of its response, once one came back through the proxy (null: it never did). */
  status: number | null;
}

export type Fault =
  /** The request is not forwarded: the connection is cut when its head arrives (it never reaches the api). */
  | 'drop-request'
  /** The request is forwarded and processed; the connection is cut when the answer starts (the answer is lost). */
  | 'drop-response';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  /** The request now in flight on this connection (HTTP/1.1 without pipelining: one at a time). */
  current: SeenRequest | null;
  dropResponse: boolean;
  /** Nothing passes any more, in either direction, but the connection stays open. */
  frozen: boolean;
}

const REQUEST_LINE = /^(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) (\S+) HTTP\/1\.[01]\r\n/;

/**
 * A TCP proxy between a client and the api, for network faults that a real network has: every
 * open connection cut at once (`cutAll`), or the next matching request dropped before it reaches
 * the api or after it was processed (`failNext`). It reads request heads to record them and to
 * match faults; it forwards bytes unchanged otherwise.
 */
export class TcpProxy {
  readonly requests: SeenRequest[] = [];
  private readonly pairs = new Set<Pair>();
  private readonly faults: { match: (request: SeenRequest) => boolean; fault: Fault }[] = [];
  private answered: { match: (request: SeenRequest) => boolean; resolve: (request: SeenRequest) => void }[] = [];

  private constructor(
    private readonly server: net.Server,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<TcpProxy> {
    const { hostname, port } = new URL(target);
    let proxy: TcpProxy | null = null;
    const server = net.createServer((client) => proxy?.accept(client, hostname, Number(port)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as net.AddressInfo;
    proxy = new TcpProxy(server, `http://127.0.0.1:${address.port}`);
    return proxy;
  }

  /** Arms a fault for the next request that matches. */
  failNext(match: (request: SeenRequest) => boolean, fault: Fault): void {
    this.faults.push({ match, fault });
  }

  /** Cuts every open connection, as a network partition would; new connections are accepted. */
  cutAll(): number {
    const count = this.pairs.size;
    for (const pair of this.pairs) this.cut(pair);
    return count;
  }

  /** Resolves when an answer to a matching request starts coming back through the proxy (already or later). */
  answerTo(match: (request: SeenRequest) => boolean): Promise<SeenRequest> {
    const seen = this.requests.find((r) => r.status !== null && match(r));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.answered.push({ match, resolve }));
  }

  /**
   * Every open connection goes silent without closing (a peer that vanished, a NAT entry that
   * expired): only the client's own timeout can tell. New connections pass.
   */
  freezeAll(): number {
    for (const pair of this.pairs) pair.frozen = true;
    return this.pairs.size;
  }

  requestsTo(method: string, path: RegExp): SeenRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.path));
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket, host: string, port: number): void {
    const upstream = net.connect(port, host);
    const pair: Pair = { client, upstream, current: null, dropResponse: false, frozen: false };
    this.pairs.add(pair);
    const drop = () => this.cut(pair);
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (chunk: Buffer) => {
      if (pair.frozen) return;
      const request = this.readHead(chunk);
      if (request) {
        pair.current = request;
        const armed = this.faults.findIndex((f) => f.match(request));
        if (armed !== -1) {
          const [{ fault }] = this.faults.splice(armed, 1) as [{ match: unknown; fault: Fault }];
          if (fault === 'drop-request') return this.cut(pair);
          pair.dropResponse = true;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (pair.frozen) return;
      if (pair.dropResponse) return this.cut(pair);
      const status = /^HTTP\/1\.[01] (\d{3}) /.exec(chunk.toString('latin1', 0, 16));
      const request = pair.current;
      if (status && request && request.status === null) {
        request.status = Number(status[1]);
        this.answered = this.answered.filter((waiter) => !(waiter.match(request) && (waiter.resolve(request), true)));
      }
      client.write(chunk);
    });
  }

  /** A request head at the start of a chunk (the client writes each head in one piece, at the start of a request). */
  private readHead(chunk: Buffer): SeenRequest | null {
    const text = chunk.toString('latin1');
    const line = REQUEST_LINE.exec(text);
    if (!line) return null;
    const end = text.indexOf('\r\n\r\n');
    const headers: Record<string, string> = {};
    for (const raw of text.slice(line[0].length, end === -1 ? undefined : end).split('\r\n')) {
      const colon = raw.indexOf(':');
      if (colon > 0) headers[raw.slice(0, colon).trim().toLowerCase()] = raw.slice(colon + 1).trim();
    }
    const request: SeenRequest = { method: line[1]!, path: line[2]!, headers, status: null };
    this.requests.push(request);
    return request;
  }

  private cut(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream.destroy();
  }
}
