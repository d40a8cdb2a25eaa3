// A load-generator process of the idle-subscribers scenario (forked by bench/run.mjs): holds
// `count` SSE streams open on the api, from its own source address (127.0.0.x: each address has its
// own ephemeral ports), and reads what arrives without parsing it, counting heartbeat comments.
// Several of these share the connections so that none needs more file descriptors than its limit.
//
// Messages from the parent: {open: {url, apiKey, sessionIds, count, localAddress, concurrency}},
// 'stats', 'close'. Answers: {opened, failed, errors}, {pings, bytes, open}, 'closed'.
import http from 'node:http';

const PING = Buffer.from(': ping');
const requests = [];
let pings = 0;
let bytes = 0;
let open = 0;

process.on('message', async (message) => {
  if (message === 'stats') return process.send({ pings, bytes, open });
  if (message === 'close') {
    for (const req of requests) req.destroy();
    return process.send('closed');
  }
  const { url, apiKey, sessionIds, count, localAddress, concurrency } = message.open;
  let failed = 0;
  const errors = new Set();
  let next = 0;
  const openOne = (i) =>
    new Promise((resolve) => {
      const req = http.get(`${url}/api/v1/agents/sessions/${sessionIds[i % sessionIds.length]}/events`, { headers: { authorization: `Bearer ${apiKey}` }, agent: false, localAddress }, (res) => {
        if (res.statusCode !== 200) {
          failed += 1;
          errors.add(`HTTP ${res.statusCode}`);
          res.resume();
          return resolve();
        }
        open += 1;
        res.on('data', (chunk) => {
          bytes += chunk.length;
          for (let at = chunk.indexOf(PING); at !== -1; at = chunk.indexOf(PING, at + PING.length)) pings += 1;
        });
        res.on('close', () => (open -= 1));
        resolve();
      });
      req.on('error', (error) => {
        failed += 1;
        errors.add(error.code ?? error.message);
        resolve();
      });
      requests.push(req);
    });
  // `concurrency` requests in flight at a time: the api authenticates and subscribes each.
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await openOne(next++);
    }),
  );
  process.send({ opened: open, failed, errors: [...errors] });
});
