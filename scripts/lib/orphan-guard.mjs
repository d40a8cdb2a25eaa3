// The orphan guard of a dev stack: a small process that outlives the stack's own process only to
// stop what it started. The stack (startStack with `orphanGuard: true`) writes the pids of its
// processes to this process's stdin as they start and restart; when stdin ends without a `done`
// line, the stack's process is gone without stopping anything (SIGKILL, a crash), and this stops
// them in the stack's own order: api and worker first (SIGTERM), then Redis (SIGTERM) and
// Postgres (SIGINT, its fast shutdown); whatever is still running after its grace period is
// killed (SIGKILL) and said so. A stack that stops normally sends `done` first: nothing to do.
//
// It runs in a process group of its own, so a signal to the stack's group does not reach it, and
// it is dependency-free (node built-ins only).
//
// Lines on stdin, one JSON object each: {"pids": {"api": 123, "worker": 124, "redis": 99,
// "postgres": 98}, "starts": {"api": "4711", …}} (the whole set of running processes each time: a
// process that exited is left out, a restart sends the new one), or {"done": true}. `starts` holds
// each process's start time (field 22 of /proc/<pid>/stat, read by the stack while the process is
// its unreaped child): a pid is signalled only while the process under it still has that start
// time, so a pid that was freed and reused by another process is never signalled. Where there is
// no /proc (macOS), no start time is sent and the pid alone is trusted.

import { readFileSync } from 'node:fs';

const APPS_GRACE_MS = 15_000;
const INFRA_GRACE_MS = 10_000;
/** The order and the polite signal of each process the stack may name. */
const ORDER = [
  { names: ['api', 'worker'], signal: 'SIGTERM', graceMs: APPS_GRACE_MS },
  { names: ['redis'], signal: 'SIGTERM', graceMs: INFRA_GRACE_MS },
  { names: ['postgres'], signal: 'SIGINT', graceMs: INFRA_GRACE_MS },
];

// The terminal may be gone with the stack: writing there must not end this process.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
const say = (line) => {
  try {
    process.stderr.write(`[stack] ${line}\n`);
  } catch {
    // nobody is listening
  }
};

let pids = {};
let starts = {};
let done = false;
let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf('\n')) !== -1) {
    const line = buffered.slice(0, newline).trim();
    buffered = buffered.slice(newline + 1);
    if (!line) continue;
    try {
      const message = JSON.parse(line);
      if (message.done) done = true;
      if (message.pids) {
        pids = message.pids;
        starts = message.starts ?? {};
      }
    } catch {
      // not ours
    }
  }
});
process.stdin.on('end', () => void (done ? process.exit(0) : stopOrphans()));
process.stdin.on('error', () => void (done ? process.exit(0) : stopOrphans()));
// Told to stop itself (a group kill of the terminal): the stack's own process handles that signal.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or null where there is none. */
function startTime(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name, which may hold spaces and parentheses: fields 3 onwards.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Still the process the stack named: alive, and (where its start time was recorded) started then. */
function alive(name, pid) {
  const recorded = starts[name];
  if (typeof recorded === 'string' && startTime(pid) !== recorded) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Signals the process only while it is still the one the stack named; false when it is not (gone, or its pid reused). */
function signalIfSame(name, pid, signal) {
  if (!alive(name, pid)) return false;
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false; // gone in between
  }
}

async function stopOrphans() {
  const order = ORDER.flatMap((step) => step.names);
  const running = Object.entries(pids)
    .filter(([name, pid]) => Number.isInteger(pid) && alive(name, pid))
    .sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
  if (running.length === 0) process.exit(0);
  say(`the stack's process is gone: stopping ${running.map(([name, pid]) => `${name} (pid ${pid})`).join(', ')}`);
  for (const step of ORDER) {
    const group = running.filter(([name]) => step.names.includes(name));
    await Promise.all(group.map(([name, pid]) => stopOne(name, pid, step.signal, step.graceMs)));
  }
  process.exit(0);
}

async function stopOne(name, pid, signal, graceMs) {
  if (!signalIfSame(name, pid, 'SIGCONT') || !signalIfSame(name, pid, signal)) return;
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!alive(name, pid)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (signalIfSame(name, pid, 'SIGKILL')) say(`${name} (pid ${pid}) did not stop within ${graceMs / 1000} s of ${signal}: killed it (SIGKILL)`);
}
