// Process and latency measurement helpers for the benchmark suite (Linux /proc based).
import { readFileSync } from 'node:fs';

const CLOCK_TICKS = 100;

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Resident set size in KiB. */
export function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

/**
 * Watches processes during one scenario: CPU seconds used and peak RSS (sampled every 50 ms).
 * @param {Record<string, number>} pids name → pid
 */
export function watch(pids) {
  const startCpu = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
  const peak = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rssKiB(pid)]));
  const started = performance.now();
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
      return { wall_s: round(wallS), processes: out };
    },
  };
}

/** Nearest-rank percentiles of a sample in milliseconds. */
export function summarize(samples) {
  const sorted = Float64Array.from(samples).sort();
  const at = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN);
  const mean = sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1);
  return { n: sorted.length, p50: round(at(50)), p95: round(at(95)), p99: round(at(99)), max: round(at(100)), mean: round(mean) };
}

export function round(value, digits = 2) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
