import { chmod, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { isIP, type Socket, connect as netConnect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { guardedLookup, hostOf, isAllowedHost, isPublicAddress, OUTBOUND_BLOCKED_CODE } from '#libs/outbound';
import type { CommandNetwork } from './command-sandbox.js';
import { domainRefusal } from './domain-rules.js';

export interface EgressProxyOptions {
  /** parseAllowedHosts entries reachable even at private or loopback addresses (SANDBOX_EGRESS_ALLOWED_HOSTS). */
  allowedHosts: string[];
}

/** One command's proxy: a unix socket the sandbox has bound in, open while the command runs. */
export interface OpenProxy {
  socketPath: string;
  close(): Promise<void>;
}

/** Connections one command may hold open through its proxy at once. */
const MAX_CONNECTIONS = 128;
/** Time to establish a connection upstream. */
const CONNECT_TIMEOUT_MS = 15_000;
/** A tunnel or request idle this long is closed. */
const IDLE_TIMEOUT_MS = 300_000;

/** Where a request is going, and whether the address policy is waived for it. */
interface Target {
  host: string;
  port: number;
  allowPrivate: boolean;
}

/**
 * The egress proxy a sandbox with network reaches (through socat, at 127.0.0.1:3128 inside): HTTP
 * CONNECT tunnels (https and anything else over TCP) and plain-HTTP forwarding, one proxy per
 * command so that its domain lists apply. Every request passes the command's lists (domainRefusal)
 * and then the deployment's address policy: a literal address must be public, a name must resolve
 * only to public addresses at connect time (guardedLookup: what is checked is what is connected),
 * unless the host is one of `allowedHosts`. A refusal answers 403 with the reason as its body.
 */
export class EgressProxy {
  private readonly proxies = new Set<OpenProxy>();

  constructor(private readonly options: EgressProxyOptions) {}

  async open(network: CommandNetwork): Promise<OpenProxy> {
    // 0711: the sandbox's user reaches the socket (0666) by its path, and cannot list the folder.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'yuxi-egress-'));
    await chmod(dir, 0o711);
    const socketPath = path.join(dir, 'proxy.sock');
    const sockets = new Set<Socket>();
    const server = http.createServer({ requestTimeout: 0 });
    server.maxConnections = MAX_CONNECTIONS;
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    server.on('connect', (req: http.IncomingMessage, socket: Socket, head: Buffer) => this.tunnel(network, req, socket, head, sockets));
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => this.forward(network, req, res, sockets));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    await chmod(socketPath, 0o666);
    const proxy: OpenProxy = {
      socketPath,
      close: async () => {
        this.proxies.delete(proxy);
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await rm(dir, { recursive: true, force: true });
      },
    };
    this.proxies.add(proxy);
    return proxy;
  }

  async close(): Promise<void> {
    await Promise.all([...this.proxies].map((proxy) => proxy.close()));
  }

  /** Where `authority` (host:port, IPv6 in brackets) may go, or why not. */
  judge(network: CommandNetwork, authority: string, defaultPort: number): Target | { refusal: string } {
    let url: URL;
    try {
      url = new URL(`http://${authority}`);
    } catch {
      return { refusal: `not a host: ${authority.slice(0, 200)}` };
    }
    const host = hostOf(url);
    const port = url.port === '' ? defaultPort : Number(url.port);
    const listed = domainRefusal(network, host);
    if (listed !== null) return { refusal: listed };
    const allowPrivate = isAllowedHost(new URL(`http://${url.host.replace(/:\d+$/, '')}:${port}`), this.options.allowedHosts);
    if (!allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) return { refusal: `${host} is a private, loopback, link-local or reserved address` };
    return { host, port, allowPrivate };
  }

  private tunnel(network: CommandNetwork, req: http.IncomingMessage, client: Socket, head: Buffer, sockets: Set<Socket>): void {
    client.on('error', () => undefined);
    const target = this.judge(network, req.url ?? '', 443);
    if ('refusal' in target) return refuse(client, target.refusal);
    const upstream = netConnect({ host: target.host, port: target.port, lookup: guardedLookup(target.allowPrivate), timeout: CONNECT_TIMEOUT_MS });
    sockets.add(upstream);
    upstream.once('close', () => sockets.delete(upstream));
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      upstream.setTimeout(IDLE_TIMEOUT_MS);
      client.setTimeout(IDLE_TIMEOUT_MS);
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.once('timeout', () => upstream.destroy(new Error('timed out')));
    client.once('timeout', () => client.destroy());
    upstream.once('error', (error: NodeJS.ErrnoException) => {
      if (!connected) refuse(client, failureReason(target.host, error), error.code === OUTBOUND_BLOCKED_CODE ? 403 : 502);
      else client.destroy();
    });
    client.once('close', () => upstream.destroy());
  }

  private forward(network: CommandNetwork, req: http.IncomingMessage, res: http.ServerResponse, sockets: Set<Socket>): void {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return answer(res, 400, 'a proxy request names an absolute http:// URL (https goes through CONNECT)');
    }
    if (url.protocol !== 'http:') return answer(res, 400, 'only http:// is forwarded; https goes through CONNECT');
    const target = this.judge(network, url.host, 80);
    if ('refusal' in target) return answer(res, 403, target.refusal);
    const headers = { ...req.headers };
    for (const name of ['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive']) delete headers[name];
    const upstream = http.request({ host: target.host, port: target.port, method: req.method, path: `${url.pathname}${url.search}`, headers, lookup: guardedLookup(target.allowPrivate), timeout: CONNECT_TIMEOUT_MS });
    upstream.on('socket', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    upstream.once('response', (response) => {
      res.writeHead(response.statusCode ?? 502, response.headers);
      response.pipe(res);
    });
    upstream.once('timeout', () => upstream.destroy(new Error('timed out')));
    upstream.once('error', (error: NodeJS.ErrnoException) => {
      if (!res.headersSent) answer(res, error.code === OUTBOUND_BLOCKED_CODE ? 403 : 502, failureReason(target.host, error));
      else res.destroy();
    });
    req.pipe(upstream);
  }
}

function failureReason(host: string, error: NodeJS.ErrnoException): string {
  if (error.code === OUTBOUND_BLOCKED_CODE) return `${host} resolves to a private, loopback, link-local or reserved address`;
  return `${host} could not be reached: ${error.code ?? error.message}`;
}

/** Answers a CONNECT that is not allowed (or failed), with the reason as its body, and closes. */
function refuse(client: Socket, reason: string, status = 403): void {
  if (client.destroyed) return;
  const body = `${reason}\n`;
  const text = status === 403 ? 'Forbidden' : 'Bad Gateway';
  client.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

function answer(res: http.ServerResponse, status: number, reason: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
  res.end(`${reason}\n`);
}
