// Process and latency measurement helpers for the benchmark suite (Linux /proc based).
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICKS = 100;

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid) {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** /proc/<pid>/stat after the command name: [0] state, [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** Resident set size in KiB. */
export function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

/**
 * CPU seconds of a service made of several processes (Postgres backends, say): every live process
 * whose command name starts with `name`, plus what the top one collected from exited children.
 */
function cpuSecondsByName(name) {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith(name)) continue;
      const fields = statFields(Number(entry));
      total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
      const parentComm = readFileSync(`/proc/${fields[1]}/comm`, 'utf8');
      if (!parentComm.startsWith(name)) total += (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
    } catch {
      // the process ended while we looked
    }
  }
  return total;
}

/**
 * CPU seconds used so far by each process of `pids`, by Postgres (all its processes) and by Redis: subtract
 * two snapshots to charge the CPU of one operation, when operations of several kinds alternate.
 */
export function cpuSnapshot(pids) {
  const out = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
  out.postgres = cpuSecondsByName('postgres');
  out.redis = cpuSecondsByName('redis-server');
  return out;
}

/** Busy and total jiffies of the whole machine, from /proc/stat. */
function machineJiffies() {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = cpu[3] + cpu[4];
  const total = cpu.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/**
 * Watches processes during one scenario: CPU seconds used and peak RSS (sampled every 50 ms).
 * @param {Record<string, number>} pids name → pid
 */
export function watch(pids) {
  const startCpu = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
  const peak = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rssKiB(pid)]));
  const started = performance.now();
  const machineStart = machineJiffies();
  const selfStart = process.cpuUsage();
  // Backends that exit during the scenario drop out of the sum; it is a lower bound.
  const servicesStart = { postgres: cpuSecondsByName('postgres'), redis: cpuSecondsByName('redis-server') };
  const timer = setInterval(() => {
    for (const [name, pid] of Object.entries(pids)) peak[name] = Math.max(peak[name], rssKiB(pid));
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      const wallS = (performance.now() - started) / 1000;
      const out = {};
      for (const [name, pid] of Object.entries(pids)) {
        const cpu = cpuSeconds(pid) - startCpu[name];
        out[name] = { cpu_s: round(cpu), cpu_pct: round((100 * cpu) / wallS), peak_rss_mib: round(Math.max(peak[name], rssKiB(pid)) / 1024) };
      }
      const machineEnd = machineJiffies();
      const self = process.cpuUsage(selfStart);
      return {
        wall_s: round(wallS),
        processes: out,
        // How saturated the whole machine was (all cores), and what the load generator itself used.
        machine_cpu_busy_pct: round((100 * (machineEnd.busy - machineStart.busy)) / (machineEnd.total - machineStart.total)),
        load_generator_cpu_pct: round((100 * (self.user + self.system)) / 1e6 / wallS),
        postgres_cpu_pct: round((100 * (cpuSecondsByName('postgres') - servicesStart.postgres)) / wallS),
        redis_cpu_pct: round((100 * (cpuSecondsByName('redis-server') - servicesStart.redis)) / wallS),
      };
    },
  };
}

/** Nearest-rank percentiles of a sample in milliseconds. */
export function summarize(samples) {
  const sorted = Float64Array.from(samples).sort();
  const at = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN);
  const mean = sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1);
  return { n: sorted.length, p50: round(at(50)), p90: round(at(90)), p95: round(at(95)), p99: round(at(99)), max: round(at(100)), mean: round(mean) };
}

export function round(value, digits = 2) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
