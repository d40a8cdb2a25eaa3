import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A fake web search provider on the wire, in each shape the `web_search` builtin reads: SearXNG
 * (`GET /search?q=…&format=json`), Brave (`GET /res/v1/web/search?q=…&count=…`) and Tavily
 * (`POST /search` with a JSON body). What it answers depends on the query: one containing
 * `http-500` answers 500, `slow` answers after `slowMs`, `not-json` answers HTML, `nothing` no
 * results; any other gets five results (the fourth with a `javascript:` URL, which is no citation).
 */
export interface FakeSearch {
  url: string;
  /** Every request received, in order. */
  requests: { method: string; path: string; params: Record<string, string>; headers: Record<string, string | string[] | undefined>; body: any }[];
  close(): Promise<void>;
}

export function fakeResults(query: string): { title: string; url: string; text: string }[] {
  return [
    { title: `First <b>${query}</b> result`, url: 'https://one.example/a?x=1', text: `About ${query} &amp; more` },
    { title: 'Second result', url: 'https://two.example/b', text: 'Second snippet' },
    { title: 'Third result', url: 'https://three.example/c', text: 'Third snippet' },
    { title: 'Not a link', url: 'javascript:alert(1)', text: 'never cited' },
    { title: 'Fifth result', url: 'https://five.example/e', text: 'Fifth snippet' },
  ];
}

export async function startFakeSearch(port = 0, options: { slowMs?: number } = {}): Promise<FakeSearch> {
  const requests: FakeSearch['requests'] = [];
  const sockets = new Set<Socket>();
  const slowMs = options.slowMs ?? 5_000;
  const server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const body = raw ? JSON.parse(raw) : undefined;
    requests.push({ method: req.method ?? 'GET', path: url.pathname, params: Object.fromEntries(url.searchParams), headers: req.headers, body });
    const shape = url.pathname === '/res/v1/web/search' ? 'brave' : req.method === 'POST' ? 'tavily' : url.pathname === '/search' ? 'searxng' : null;
    const query = shape === 'tavily' ? String(body?.query ?? '') : (url.searchParams.get('q') ?? '');
    if (!shape) return void res.writeHead(404).end();
    if (query.includes('http-500')) return void res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded');
    if (query.includes('slow')) await new Promise((resolve) => setTimeout(resolve, slowMs));
    if (res.destroyed) return;
    if (query.includes('not-json')) return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
    const results = query.includes('nothing') ? [] : fakeResults(query);
    const answer =
      shape === 'brave'
        ? { type: 'search', query: { original: query }, web: { type: 'search', results: results.map((r) => ({ title: r.title, url: r.url, description: r.text })) } }
        : shape === 'tavily'
          ? { query, results: results.map((r) => ({ title: r.title, url: r.url, content: r.text, score: 0.5 })) }
          : { query, number_of_results: results.length, results: results.map((r) => ({ title: r.title, url: r.url, content: r.text, engine: 'fake' })) };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
