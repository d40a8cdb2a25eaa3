// A TCP proxy in front of a server the test owns (here a local S3-compatible store), that can
// hold traffic: while held, what clients send is kept back (not forwarded) and recorded, so a
// test can see that a process is blocked on a request to it, and release it later. Only
// 127.0.0.1; every connection is closed on stop.
import net from 'node:net';

interface Held {
  socket: net.Socket;
  chunks: Buffer[];
}

export class StallingProxy {
  private holding = false;
  private readonly held = new Map<net.Socket, Held>();
  private readonly sockets = new Set<net.Socket>();
  private waiters: { predicate: (text: string) => boolean; resolve: (text: string) => void }[] = [];

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<StallingProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new StallingProxy(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (client) => proxy.accept(client, targetPort));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** From now on, client bytes are kept back (requests already forwarded finish normally). */
  hold(): void {
    this.holding = true;
  }

  /** Forwards everything kept back, in order, and passes traffic through again. */
  release(): void {
    this.holding = false;
    for (const { socket, chunks } of this.held.values()) {
      const upstream = (socket as net.Socket & { upstream?: net.Socket }).upstream;
      for (const chunk of chunks.splice(0)) upstream?.write(chunk);
    }
    this.held.clear();
  }

  /** Resolves with the start of the first held request matching `predicate` (bounded by the caller). */
  heldRequest(predicate: (text: string) => boolean): Promise<string> {
    for (const { chunks } of this.held.values()) {
      const text = Buffer.concat(chunks).toString('latin1');
      if (predicate(text)) return Promise.resolve(text);
    }
    return new Promise((resolve) => this.waiters.push({ predicate, resolve }));
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket, targetPort: number): void {
    const upstream = net.connect(targetPort, '127.0.0.1');
    (client as net.Socket & { upstream?: net.Socket }).upstream = upstream;
    this.sockets.add(client).add(upstream);
    upstream.on('data', (chunk) => client.write(chunk));
    const close = () => {
      this.held.delete(client);
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    upstream.on('close', close).on('error', close);
    client.on('close', close).on('error', close);
    client.on('data', (chunk) => {
      const queued = this.held.get(client);
      if (!this.holding && !queued) {
        upstream.write(chunk);
        return;
      }
      const entry = queued ?? { socket: client, chunks: [] };
      entry.chunks.push(chunk);
      this.held.set(client, entry);
      const text = Buffer.concat(entry.chunks).toString('latin1');
      this.waiters = this.waiters.filter((w) => {
        if (!w.predicate(text)) return true;
        w.resolve(text);
        return false;
      });
    });
  }
}
