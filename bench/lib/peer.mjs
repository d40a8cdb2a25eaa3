// Peer benchmark: the LangGraph.js dev server (@langchain/langgraph-api) running
// the same zero-delay "echo" turn as ours, driven over HTTP like a client would.
//
// The peer is installed at run time into bench/.peer/<key>/ (gitignored), never
// into the project. The install is keyed by the requested package specs, so
// re-runs reuse it; delete bench/.peer/ to force a fresh install.

import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const PEER_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '.peer');

// Exactly what the dev server needs: the CLI (provides `langgraphjs dev`), the API
// server, and its required peers @langchain/langgraph + @langchain/core (npm >= 7
// pulls in the remaining non-optional peers: langgraph-checkpoint, typescript).
const PACKAGES = [
  '@langchain/langgraph-cli@1.5',
  '@langchain/langgraph-api@1.5',
  '@langchain/langgraph@1',
  '@langchain/core@1',
];
const CACHE_KEY = `node${process.versions.node.split('.')[0]}-` +
  PACKAGES.map((p) => p.replace('@langchain/', '').replace(/[^\w.-]+/g, '_')).join('+');

const GRAPH_ID = 'echo';
const INPUT_TEXT = 'hello there';
const EXPECTED = `Echo: ${INPUT_TEXT}`;

// Same fake model as ours: one node, latest user message -> "Echo: <text>".
const GRAPH_SRC = `import { StateGraph, MessagesAnnotation, START, END } from '@langchain/langgraph';
import { AIMessage } from '@langchain/core/messages';

function textOf(content) {
  if (typeof content === 'string') return content;
  return content.map((part) => (typeof part === 'string' ? part : part.text ?? '')).join('');
}

function echo(state) {
  const lastUser = state.messages.findLast((m) => m.getType() === 'human');
  return { messages: [new AIMessage('Echo: ' + textOf(lastUser?.content ?? ''))] };
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode('echo', echo)
  .addEdge(START, 'echo')
  .addEdge('echo', END)
  .compile();
`;

function run(cmd, args, opts) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 16 << 20, ...opts }, (err, stdout, stderr) => {
      if (err) {
        err.message += `\n${String(stdout).slice(-2000)}\n${String(stderr).slice(-4000)}`;
        reject(err);
      } else resolve(stdout);
    });
  });
}

/** Install (or reuse) the peer packages; returns the folder holding node_modules. */
async function ensureInstalled(log) {
  const dir = join(PEER_ROOT, CACHE_KEY);
  const marker = join(dir, 'node_modules', '@langchain', 'langgraph-api', 'package.json');
  if (existsSync(marker)) {
    log(`[peer] using cached install ${dir}`);
    return dir;
  }
  // Install into a scratch folder and rename when complete, so an interrupted or
  // failed install is never mistaken for a cached one.
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  // Own package.json so npm treats this folder as the project root instead of
  // walking up to /work/main/package.json.
  await writeFile(join(tmp, 'package.json'), JSON.stringify({ name: 'langgraph-peer', private: true, type: 'module' }) + '\n');
  log(`[peer] installing ${PACKAGES.join(' ')} ...`);
  const t0 = performance.now();
  try {
    // --ignore-scripts: the only install script in the tree is esbuild's postinstall,
    // which just validates the binary already shipped by @esbuild/<platform>.
    await run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error',
      '--prefix', tmp, ...PACKAGES], { cwd: tmp });
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw new Error(`[peer] npm install failed: ${err.message}`, { cause: err });
  }
  log(`[peer] installed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return dir;
}

async function readVersion(dir, pkg) {
  try {
    return JSON.parse(await readFile(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** SIGTERM the whole process group (npm-less CLI -> tsx -> server -> esbuild), then SIGKILL. */
async function killGroup(pgid, graceMs = 5000) {
  try { process.kill(-pgid, 'SIGTERM'); } catch { return; }
  const deadline = Date.now() + graceMs;
  while (groupAlive(pgid) && Date.now() < deadline) await sleep(100);
  if (groupAlive(pgid)) {
    try { process.kill(-pgid, 'SIGKILL'); } catch { /* already gone */ }
    while (groupAlive(pgid)) await sleep(50);
  }
}

function percentile(sorted, p) {
  // Nearest-rank: the smallest value with at least p% of samples <= it.
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1];
}

async function postJson(url, body) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`[peer] POST ${url} -> ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

/** One client-side turn on a fresh conversation; throws unless the echo came back. */
async function turn(base) {
  const thread = await postJson(`${base}/threads`, {});
  if (!thread?.thread_id) throw new Error(`[peer] no thread_id in ${JSON.stringify(thread)}`);
  const out = await postJson(`${base}/threads/${thread.thread_id}/runs/wait`, {
    assistant_id: GRAPH_ID,
    input: { messages: [{ role: 'user', content: INPUT_TEXT }] },
  });
  const last = out?.messages?.at(-1);
  if (last?.type !== 'ai' || last.content !== EXPECTED) {
    throw new Error(`[peer] expected last message AI "${EXPECTED}", got ${JSON.stringify(out).slice(0, 500)}`);
  }
}

export async function measurePeer({ iterations = 200, warmup = 20, log = console.log } = {}) {
  const dir = await ensureInstalled(log);
  await writeFile(join(dir, 'graph.mjs'), GRAPH_SRC);
  await writeFile(join(dir, 'langgraph.json'),
    JSON.stringify({ node_version: '20', graphs: { [GRAPH_ID]: './graph.mjs:graph' }, env: {} }, null, 2) + '\n');
  // The in-memory store snapshots itself to .langgraph_api/ and reloads it on start;
  // clear it so every run begins with empty storage.
  await rm(join(dir, '.langgraph_api'), { recursive: true, force: true });

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // Run the CLI's bin with our own node instead of `npx langgraphjs`: same program,
  // minus the npm wrapper process and any chance of npx reaching for the registry.
  const cli = join(dir, 'node_modules', '@langchain', 'langgraph-cli', 'dist', 'cli', 'cli.mjs');
  const child = spawn(process.execPath,
    [cli, 'dev', '--no-browser', '--no-reload', '--host', '127.0.0.1', '--port', String(port)], {
      cwd: dir,
      detached: true, // own process group, so the whole tree can be killed at once
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        LANGGRAPH_CLI_NO_ANALYTICS: '1',
        LANGSMITH_TRACING: 'false',
        LANGCHAIN_TRACING_V2: 'false',
        NO_COLOR: '1',
      },
    });
  const pid = child.pid;

  // Keep the last log lines for error messages. Reading the pipes also matters for
  // the measurement itself: an undrained pipe would eventually block the server.
  const tail = [];
  const onData = (buf) => {
    // eslint-disable-next-line no-control-regex
    for (const line of buf.toString().replace(/\x1b\[[0-9;]*m/g, '').split('\n')) {
      if (line.trim()) tail.push(line);
    }
    if (tail.length > 60) tail.splice(0, tail.length - 60);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  let exited = null;
  child.on('exit', (code, signal) => { exited = { code, signal }; });
  const spawnError = new Promise((_, reject) => child.on('error', reject));
  spawnError.catch(() => {});

  // A detached group survives our own death, so also kill it if this process exits
  // or is interrupted before the finally block runs.
  const killSync = () => { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } };
  const onSignal = (sig) => { killSync(); process.kill(process.pid, sig); };
  process.once('exit', killSync);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    if (!pid) await spawnError;
    const t0 = performance.now();
    const deadline = Date.now() + 90_000;
    let info;
    for (;;) {
      if (exited) throw new Error(`[peer] dev server exited early (${JSON.stringify(exited)}):\n${tail.slice(-30).join('\n')}`);
      if (Date.now() > deadline) throw new Error(`[peer] dev server not ready after 90 s:\n${tail.slice(-30).join('\n')}`);
      try {
        const res = await fetch(`${base}/ok`);
        if (res.ok) {
          info = await fetch(`${base}/info`).then((r) => r.json(), () => ({}));
          break;
        }
      } catch { /* not listening yet */ }
      await sleep(250);
    }
    const version = info?.version ?? (await readVersion(dir, '@langchain/langgraph-api'));
    log(`[peer] langgraph-api ${version} (langgraph ${info?.langgraph_js_version}) ready on ${base} ` +
      `in ${((performance.now() - t0) / 1000).toFixed(1)} s, pid ${pid}`);

    for (let i = 0; i < warmup; i++) await turn(base);

    const samples = [];
    const loopStart = performance.now();
    for (let i = 0; i < iterations; i++) {
      const s = performance.now();
      await turn(base);
      samples.push(performance.now() - s);
    }
    const loopMs = performance.now() - loopStart;

    const sorted = [...samples].sort((a, b) => a - b);
    const round = (x) => Math.round(x * 1000) / 1000;
    return {
      name: 'langgraph-js dev server',
      version,
      samples_ms: samples,
      p50: round(percentile(sorted, 50)),
      p95: round(percentile(sorted, 95)),
      p99: round(percentile(sorted, 99)),
      mean: round(samples.reduce((a, b) => a + b, 0) / samples.length),
      throughput_per_s: round(samples.length / (loopMs / 1000)),
      pid,
    };
  } finally {
    process.off('exit', killSync);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await killGroup(pid);
  }
}
