// The baseline of the SSE fan-out scenario: a raw Node http server that writes the same frames
// (same size, same rate) to every open stream from memory, with no framework, database or Redis.
// Whatever lag it shows on this machine, under the same load generator, is the floor for ours.
import http from 'node:http';

const clients = new Set();
const padding = 'x'.repeat(Number(process.env.FRAME_PADDING ?? 260));

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/events') {
    res.useChunkedEncodingByDefault = false;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': connected\n\n');
    clients.add(res);
    req.on('close', () => clients.delete(res));
    return;
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method === 'POST' && url.pathname === '/emit') {
    const count = Number(url.searchParams.get('count') ?? 100);
    const delayMs = Number(url.searchParams.get('delay') ?? 50);
    res.writeHead(202).end();
    let sent = 0;
    const timer = setInterval(() => {
      // The id carries the write time, as our cursors carry the publish time.
      const frame =
        sent < count
          ? `id: ${Date.now()}\nevent: agent.session.turn.output_text.delta\ndata: {"type":"agent.session.turn.output_text.delta","delta":"w${sent} ","pad":"${padding}"}\n\n`
          : `id: ${Date.now()}\nevent: agent.session.turn.completed\ndata: {"type":"agent.session.turn.completed"}\n\n`;
      const encoded = Buffer.from(frame);
      for (const client of clients) client.write(encoded);
      sent += 1;
      if (sent > count) clearInterval(timer);
    }, delayMs);
    return;
  }
  res.writeHead(404).end();
});

server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
process.on('SIGTERM', () => process.exit(0));
