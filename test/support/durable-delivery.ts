/**
 * Reads a subscriber's events against the outbox (from its first row): the gaps in the durable
 * sequence, each covered or not by a resync received since the durable event before it, and the
 * events that came twice or after a later one. Live events (deltas) are not in the outbox: skipped.
 */
export function durableDelivery(
  outbox: { seq: number; eventId: string }[],
  events: { type: string; data?: any }[],
): { missing: number; covered: string[]; uncovered: string[]; duplicates: number[]; outOfOrder: number[] } {
  const seqOf = new Map(outbox.map((row) => [row.eventId, row.seq]));
  const seen = new Set<number>();
  const verdict = { missing: 0, covered: [] as string[], uncovered: [] as string[], duplicates: [] as number[], outOfOrder: [] as number[] };
  let last = (outbox[0]?.seq ?? 1) - 1;
  let resynced = false;
  for (const event of events) {
    if (event.type === 'yuxi.session.resync') {
      resynced = true;
      continue;
    }
    const seq = seqOf.get(event.data?.event_id);
    if (seq === undefined) continue;
    if (seen.has(seq)) {
      verdict.duplicates.push(seq);
      continue;
    }
    seen.add(seq);
    if (seq < last) {
      verdict.outOfOrder.push(seq);
      continue;
    }
    if (seq > last + 1) (resynced ? verdict.covered : verdict.uncovered).push(`${last + 1}..${seq - 1}`);
    last = seq;
    resynced = false;
  }
  verdict.missing = outbox.filter((row) => !seen.has(row.seq)).length;
  return verdict;
}
