// The storage scenario's tables as text (bench/lib/storage-scenarios.mjs, issue 43).
import { round } from './measure.mjs';

/** The report's per-turn tables, the aged figures and what deletion and the purges left, as lines for the log. */
export function storageTables(report) {
  const kb = (bytes) => (bytes === null ? '—' : `${round(bytes / 1024, 2)} KB`);
  const lines = [];
  for (const [name, w] of [['echo turn', report.echo], ['tool turn', report.tool], ['compaction turn', report.compaction]]) {
    const rel = w.postgres_relations;
    const rows = w.postgres_rows;
    lines.push(
      `${name}: relations ${kb(rel.per_turn)} per turn (items ${round(100 * (rel.conversation_share ?? 0), 1)} %), rows ${kb(rows.per_turn)} per turn (items ${round(100 * (rows.conversation_share ?? 0), 1)} %, ${rows.bytes_per_conversation_byte} bytes per item byte), Redis ${w.redis.used_memory_per_turn} bytes and ${w.redis.keys_per_turn} keys per turn`,
      '| table | relation bytes/turn (heap+toast / indexes) | row bytes/turn | rows/turn |',
      '|---|---|---|---|',
    );
    const rowsByTable = new Map(rows.by_table.map((t) => [t.table, t]));
    const names = [...new Set([...rel.by_table.map((t) => t.table), ...rows.by_table.map((t) => t.table)])];
    for (const table of names.slice(0, 14)) {
      const r = rel.by_table.find((t) => t.table === table);
      const x = rowsByTable.get(table);
      lines.push(`| ${table} | ${r ? `${r.total_per_turn} (${r.table_per_turn} / ${r.index_per_turn})` : 0} | ${x?.bytes_per_turn ?? 0} | ${x?.rows_per_turn ?? 0} |`);
    }
    lines.push(`largest indexes: ${rel.by_index.slice(0, 5).map((i) => `${i.index} ${i.per_turn}`).join(', ')}`);
    lines.push(`Redis by key pattern (bytes/turn): ${w.redis.by_pattern.slice(0, 4).map((p) => `${p.pattern} ${p.bytes_per_turn}`).join(', ')}`);
    lines.push('');
  }
  const left = report.left;
  lines.push(
    `left after deleting every session, ${report.purges.length} purges and VACUUM: ${kb(left.postgres_relations.total_bytes)} of ${kb(report.all_written.postgres_relations.total_bytes)} relation growth (${round(100 * (left.share_of_growth_left ?? 0), 1)} %), ${kb(left.postgres_rows.bytes)} of ${kb(report.all_written.postgres_rows.bytes)} row bytes (${round(100 * (left.share_of_row_bytes_left ?? 0), 1)} %); Redis ${kb(left.redis.used_memory_bytes)}, ${left.redis.keys} keys above the baseline`,
  );
  if (report.aged) {
    const a = report.aged;
    const rel = a.all_turns.postgres_relations;
    const receipts = rel.by_table.find((t) => t.table === 'idempotency_receipts')?.total_per_turn ?? 0;
    lines.push(
      `once aged (${a.name}), live: relations ${kb(rel.per_turn)} per turn of all turns (${kb(rel.per_turn - receipts)} without the receipts, which expire by real time); the echo window's rows ${kb(a.echo_rows.per_turn)} per echo turn (${kb(a.echo_rows_per_turn_without_receipts)} without receipts), items ${round(100 * (a.echo_rows.conversation_share ?? 0), 1)} %: ${a.echo_rows.by_table.slice(0, 8).map((t) => `${t.table} ${t.bytes_per_turn}`).join(', ')}`,
    );
  }
  return lines.join('\n');
}
