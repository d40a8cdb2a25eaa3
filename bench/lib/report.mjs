// The bench's report (bench/run.mjs): the machine it ran on, the results file and the table in
// docs/benchmarks.md.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../../scripts/lib/build.mjs';
import { round } from './measure.mjs';

export function machineInfo() {
  return { cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model, memory_gib: round(os.totalmem() / 2 ** 30, 1), node: process.version, platform: `${os.type()} ${os.release()}` };
}

export function writeReport(report, { partial, log }) {
  const day = report.date.slice(0, 10);
  const resultsDir = path.join(ROOT, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  // A run of some scenarios only (`partial`) must not replace the full report of the day.
  const file = path.join(resultsDir, partial ? `${day}.partial.json` : `${day}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`results: ${path.relative(ROOT, file)}`);

  const rows = [];
  const s = report.scenarios;
  const cpu = (x) =>
    x?.processes
      ? `api ${x.processes.api.cpu_pct} % / worker ${x.processes.worker.cpu_pct} % (Postgres ${x.postgres_cpu_pct} %, Redis ${x.redis_cpu_pct} %, load generator ${x.load_generator_cpu_pct} %; machine ${x.machine_cpu_busy_pct} % busy)`
      : '';
  const rss = (x) => (x?.processes ? `api ${x.processes.api.peak_rss_mib} / worker ${x.processes.worker.peak_rss_mib}` : '');
  const ok = (x) => (x.met ? 'met' : '**missed**');
  if (s.budget) {
    const t = s.budget;
    const by = t.cpu_ms_per_turn_by_process;
    const limits = Object.entries(t.budget).map(([name, most]) => `${name.replace(/_per_turn$/, '')} ≤ ${most}`).join(', ');
    rows.push(`| budget per echo turn (${t.turns} sequential turns) | — | ${t.statements_per_turn} SQL statements, ${t.transactions_per_turn} write transactions, ${t.wal_bytes_per_turn} WAL bytes, ${t.redis_commands_per_turn} Redis commands | — | ${t.cpu_ms_per_turn} ms CPU per turn: api ${by.api} / worker ${by.worker} / Postgres ${by.postgres} / Redis ${by.redis} | — | bench/budget.json (held by test/budget without periodic work): ${limits} | — |`);
    const b = t.budgeted_turn;
    if (b) {
      const bb = b.cpu_ms_per_turn_by_process;
      rows.push(`| budgeted echo turn (${b.turns} sequential turns, a budget in each session's scope) | — | ${b.statements_per_turn} SQL statements, ${b.transactions_per_turn} write transactions, ${b.wal_bytes_per_turn} WAL bytes, ${b.redis_commands_per_turn} Redis commands | — | ${b.cpu_ms_per_turn} ms CPU per turn: api ${bb.api} / worker ${bb.worker} / Postgres ${bb.postgres} / Redis ${bb.redis} | — | the unbudgeted turn above: ${t.statements_per_turn} statements, ${t.redis_commands_per_turn} Redis commands | — |`);
    }
  }
  if (s.turn_overhead) {
    const t = s.turn_overhead;
    rows.push(`| turn overhead | p50 ${t.latency_ms.p50} / p95 ${t.latency_ms.p95} / p99 ${t.latency_ms.p99} | ${t.throughput_per_s} turns/s | — | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.tool_turn) {
    const t = s.tool_turn;
    const checked = t.checks_passed ? `${t.tool_outputs_returned} tool outputs returned` : `**checks failed** (${t.tool_outputs_returned} tool outputs, model calls ${t.model_calls.tool}/${t.model_calls.text})`;
    rows.push(`| tool turn (fake OpenAI, 1 calculator step) | p50 ${t.latency_ms.p50} / p95 ${t.latency_ms.p95} / p99 ${t.latency_ms.p99} | ${t.throughput_per_s} turns/s, ${checked} | text turn via fake p50 ${t.baseline.latency_ms.p50} / p99 ${t.baseline.latency_ms.p99} (p50 ×${t.ratio_p50_to_baseline}, p99 ×${t.ratio_p99_to_baseline}; +${t.tool_step_overhead_p50_ms} ms per tool step) | ${cpu(t)} | ${rss(t)} | — | — |`);
  }
  if (s.long_session) {
    const t = s.long_session;
    const h = t.history_items;
    const checked = t.checks_passed ? '' : ', **checks failed**';
    rows.push(`| long session (${h.long.min}–${h.long.max} items of history) | p50 ${t.latency_ms.p50} / p90 ${t.latency_ms.p90} / p99 ${t.latency_ms.p99} | ${t.throughput_per_s} turns/s; worker CPU ${t.cpu_ms_per_turn.long.worker} vs ${t.cpu_ms_per_turn.short.worker} ms/turn${checked} | ${h.short.min}–${h.short.max} items p50 ${t.baseline.latency_ms.p50} / p90 ${t.baseline.latency_ms.p90} (p50 ×${t.ratio_p50_to_baseline}, p90 ×${t.ratio_p90_to_baseline}) | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.sustained_turns) {
    const t = s.sustained_turns;
    rows.push(`| sustained turns (200 sessions) | p50 ${t.latency_ms.p50} / p95 ${t.latency_ms.p95} / p99 ${t.latency_ms.p99} | ${t.turns_per_s} turns/s, ${t.errors} errors, ${t.cpu_ms_per_turn} ms CPU per turn | Postgres commits ${t.baseline.commits_per_s}/s (×${t.ratio_to_baseline}) | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.scale_out) {
    const t = s.scale_out;
    rows.push(`| scale-out: 2 api × 2 workers | — | ${t.two_by_two.turns_per_s} turns/s, ${t.two_by_two.cpu_ms_per_turn} ms CPU per turn (machine ${t.two_by_two.machine_cpu_busy_pct} % busy) | 1 api × 1 worker ${t.one_by_one.turns_per_s} turns/s, ${t.one_by_one.cpu_ms_per_turn} ms CPU per turn (×${t.ratio_turns_per_s}) | — | — | — | — |`);
  }
  if (s.console) {
    const t = s.console;
    const f = Object.entries(t.api_filters_ms).map(([name, x]) => `${name} p50 ${x.p50}`).join(', ');
    rows.push(`| console (${t.items} items; 100,000 sessions) | session page first visit ${t.session_page_ms.first_visit} ms, warm p50 ${t.session_page_ms.warm.p50}; explorer first visit ${t.explorer_page_ms.first_visit}, warm p50 ${t.explorer_page_ms.warm.p50} | admin search first page p50 ${t.api_first_page_ms.p50} / p99 ${t.api_first_page_ms.p99} ms; ${t.api_cursor_walk_ms.pages} cursor pages p50 ${t.api_cursor_walk_ms.p50} / max ${t.api_cursor_walk_ms.max} ms; ${f} | — | — | — | ${t.target} | ${ok(t)} |`);
  }
  for (const [name, label] of [['submit', 'submit c=50'], ['replay', 'replay c=50'], ['read', 'read c=50']]) {
    const t = s[name];
    if (!t) continue;
    rows.push(`| ${label} | p50 ${t.ours.latency_ms.p50} / p90 ${t.ours.latency_ms.p90} / p99 ${t.ours.latency_ms.p99} | ${t.ours.requests_per_s} req/s, ${t.ours.non_2xx} non-2xx${t.duplicates !== undefined ? `, ${t.duplicates} duplicates` : ''} | bare route ${t.baseline.requests_per_s} req/s, p99 ${t.baseline.latency_ms.p99} (×${t.ratio_to_baseline}) | ${cpu(t.ours)} | ${rss(t.ours)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.sse_fanout) {
    const t = s.sse_fanout;
    rows.push(`| SSE fan-out (5,000 subscribers) | lag p50 ${t.delivery_lag_ms.p50} / p95 ${t.delivery_lag_ms.p95} / p99 ${t.delivery_lag_ms.p99} | ${t.deltas_delivered}/${t.deltas_expected} deltas, ${t.api_rss_per_connection_kib} KiB/conn, Redis clients ${t.redis_connected_clients.before}→${t.redis_connected_clients.with_subscribers} | raw Node SSE server lag p50 ${t.baseline.delivery_lag_ms.p50} / p99 ${t.baseline.delivery_lag_ms.p99} (p99 ×${t.ratio_p99_to_baseline}) | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.idle_subscribers) {
    const t = s.idle_subscribers;
    rows.push(`| idle SSE subscribers (${t.subscribers_open} of ${t.subscribers_target} open; fd limit ${t.api_fd_limit}) | — | opened ${t.opens_per_s}/s, ${t.subscribers_failed} failed; ${t.pings_received_per_connection} heartbeats per connection in ${t.idle_s} s, ${t.still_open_after_idle} still open | — | idle api ${t.api_idle_cpu_pct} % (${t.api_cpu_ms_per_heartbeat} ms per heartbeat of all, ${t.api_cpu_us_per_connection_heartbeat} µs per connection) | api RSS ${round(t.api_rss_kib.open / 1024)} MiB: ${t.api_rss_per_connection_kib} KiB/conn (heap ${t.api_heap_per_connection_kib} KiB/conn); Redis clients ${t.redis_connected_clients.before}→${t.redis_connected_clients.with_subscribers} | ${t.target} | ${ok(t)} |`);
  }
  if (s.automations) {
    const t = s.automations;
    rows.push(`| automations (${t.automations} active, every ${t.period_s} s) | fire lag p50 ${t.fire_lag_ms.p50} / p95 ${t.fire_lag_ms.p95} / p99 ${t.fire_lag_ms.p99} | ${t.fires_per_s} fires/s: ${t.fires} fires, ${t.skips} skips, ${t.failed} failed; ${t.recorded_times}/${t.scheduled_times} scheduled times recorded | — | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.fork) {
    const t = s.fork;
    const sizes = t.by_size.map((x) => `${x.items} items: ${x.statements_per_fork} statements, ${x.rows_per_fork} rows, p50 ${x.latency_ms.p50} / p99 ${x.latency_ms.p99} ms`).join('; ');
    const page = t.pages[0];
    rows.push(`| fork (${t.by_size.map((x) => x.items).join(' / ')}-item sources) | ${sizes} | ${t.by_size[0].forks} forks per size, ${t.by_size.map((x) => x.items_copied).join(' / ')} items copied | items ${page.page}: fork p50 ${page.fork.p50} / p99 ${page.fork.p99} vs source p50 ${page.source.p50} / p99 ${page.source.p99} (p50 ×${page.ratio_p50}) | — | — | ${t.target} | ${ok(t)} |`);
  }
  if (s.storage) {
    const t = s.storage;
    const kb = (bytes) => `${round(bytes / 1024, 2)} KB`;
    const top = t.echo.postgres_relations.by_table.slice(0, 3).map((x) => `${x.table} ${kb(x.total_per_turn)}`).join(', ');
    rows.push(`| storage (${t.config.echo_turns} echo turns, ${t.config.echo_sessions} sessions) | — | ${kb(t.echo.postgres_relations.per_turn)} Postgres per echo turn (rows ${kb(t.echo.postgres_rows.per_turn)}; items ${round(100 * t.echo.postgres_relations.conversation_share, 1)} %; ${top}), Redis ${kb(t.echo.redis.used_memory_per_turn)}; tool turn ${kb(t.tool.postgres_relations.per_turn)} | after deleting the sessions${t.purges.length ? ', purges' : ''} and VACUUM: ${kb(t.left.postgres_relations.total_bytes)} left (${round(100 * t.left.share_of_growth_left, 1)} % of the growth) | — | — | ${t.target} | ${ok(t)} |`);
  }
  if (s.peer) {
    const t = s.peer;
    rows.push(`| peer: ${t.peer.name} ${t.peer.version} | p50 ${t.peer.latency_ms.p50} / p95 ${t.peer.latency_ms.p95} / p99 ${t.peer.latency_ms.p99} | ${t.peer.throughput_per_s} turns/s | ours p50 ${t.our_turn_p50_ms} ms (×${t.ratio_ours_to_peer}) | — | — | ${t.target} | ${ok(t)} |`);
  }
  const table = [
    `Run of ${report.date} on ${report.machine.cpus} × ${report.machine.cpu_model}, ${report.machine.memory_gib} GiB, Node ${report.machine.node}.`,
    '',
    '| scenario | latency (ms) | throughput | baseline (same run) | CPU (api / worker) | peak RSS MiB (api / worker) | target | |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  if (partial) {
    log(`partial run: docs/benchmarks.md left as it is\n${table}`);
    return;
  }
  const docFile = path.join(ROOT, 'docs', 'benchmarks.md');
  const doc = readFileSync(docFile, 'utf8');
  const begin = '<!-- bench:results:begin -->';
  const end = '<!-- bench:results:end -->';
  const updated = doc.replace(new RegExp(`${begin}[\\s\\S]*${end}`), `${begin}\n${table}\n${end}`);
  writeFileSync(docFile, updated);
  log(`table: docs/benchmarks.md\n${table}`);
}
