import { groupSpans, jsonBytes, type SpanOfTrace } from './otlp-json.js';
import type { SessionTraceDto } from './trace.dto.js';

/** A response of the traces route is at most this long (UTF-8 bytes), as upstream bounds it. */
export const MAX_TRACES_RESPONSE_BYTES = 16 * 1024 * 1024;

/** A turn of the page, with the trace it belongs to (the engine's `turns.trace_id`) and the inputs it consumed. */
export interface TracedTurn {
  id: string;
  traceId: string;
  createdAt: Date;
  /** Its inputs (bounded by the engine): their `accept_input` spans and those spans' parents are in its entry. */
  inputIds: readonly string[];
}

/**
 * A stored span of the page's `ord`-th turn (from 0), in page order then start order. `bytes` is
 * at least the length of the span's JSON (the database measures its jsonb text, which is never
 * shorter than the compact JSON); `total` is how many spans the turn's entry has stored (its own
 * spans of the trace, its inputs' `accept_input` spans and their parents), all read or not.
 */
export interface SpanRowOfPage extends SpanOfTrace {
  ord: number;
  bytes: number;
  total: number;
}

// What the JSON around the spans costs, rounded up: the list envelope (object, ids, has_more), one
// trace entry without its spans, a resource group and a scope group without theirs.
const ENVELOPE_BYTES = 256;
const ENTRY_BYTES = 256;
const RESOURCE_GROUP_BYTES = 40;
const SCOPE_GROUP_BYTES = 32;

/** The running size of one entry as spans are added to it (groups cost once, when first seen). */
class EntrySize {
  private readonly resources = new Set<string>();
  private readonly scopes = new Set<string>();
  bytes = ENTRY_BYTES;

  /** What adding the span would cost, without adding it. */
  cost(row: SpanRowOfPage): { bytes: number; resourceKey: string; scopeKey: string } {
    const resourceKey = JSON.stringify(row.resource);
    const scopeKey = `${resourceKey}\n${JSON.stringify(row.scope)}`;
    let bytes = row.bytes + 1;
    if (!this.resources.has(resourceKey)) bytes += Buffer.byteLength(resourceKey) + RESOURCE_GROUP_BYTES;
    if (!this.scopes.has(scopeKey)) bytes += jsonBytes(row.scope) + SCOPE_GROUP_BYTES;
    return { bytes, resourceKey, scopeKey };
  }

  add(cost: { bytes: number; resourceKey: string; scopeKey: string }): void {
    this.resources.add(cost.resourceKey);
    this.scopes.add(cost.scopeKey);
    this.bytes += cost.bytes;
  }
}

/**
 * The traces of one page under the response bound. Turns are taken in page order while each whole
 * trace fits in what is left; the first that does not ends the page (`has_more` true, so the next
 * page starts with it). A trace that is the first of its page and still does not fit is cut: it
 * keeps its spans that fit, earliest first, and says `yuxi.truncated: true` (the rest are never
 * served: the next page starts after it). A turn whose spans are all gone (retention deleted them
 * between the page's reads) is skipped. A trace that retention removed in part is served with what
 * remains, `yuxi.truncated` false: only the response bound cuts; the store keeps no count of a
 * trace's spans to tell a partial trace from a whole one.
 *
 * `rows` may end early: the read stops once the spans' bytes reach `boundBytes` (the page cannot
 * hold more). A turn after the last row read is then not known, so the page ends before it.
 * `more`: whether turns follow the page's (the turn read's limit + 1).
 */
export function cutTracePage(sessionId: string, turns: readonly TracedTurn[], rows: readonly SpanRowOfPage[], more: boolean, boundBytes = MAX_TRACES_RESPONSE_BYTES): { data: SessionTraceDto[]; hasMore: boolean } {
  const byTurn = new Map<number, SpanRowOfPage[]>();
  let readBytes = 0;
  for (const row of rows) {
    readBytes += row.bytes;
    const list = byTurn.get(row.ord);
    if (list) list.push(row);
    else byTurn.set(row.ord, [row]);
  }
  // The read stopped at the bound: nothing is known of the turns after the last one it reached.
  const lastKnown = readBytes >= boundBytes ? (rows.at(-1)?.ord ?? -1) : Number.POSITIVE_INFINITY;
  const data: SessionTraceDto[] = [];
  let used = ENVELOPE_BYTES;
  for (let ord = 0; ord < turns.length; ord += 1) {
    const turn = turns[ord]!;
    if (ord > lastKnown) return { data, hasMore: true };
    const spans = byTurn.get(ord) ?? [];
    if (spans.length === 0) continue;
    const size = new EntrySize();
    const kept: SpanRowOfPage[] = [];
    for (const row of spans) {
      const cost = size.cost(row);
      if (used + size.bytes + cost.bytes > boundBytes) break;
      size.add(cost);
      kept.push(row);
    }
    const whole = kept.length === spans.length && spans.length === spans[0]!.total;
    if (!whole && data.length > 0) return { data, hasMore: true };
    // The first trace of the page, larger than the bound: what fits of it (at least its first span).
    if (kept.length === 0) kept.push(spans[0]!);
    data.push(traceEntry(sessionId, turn, kept, !whole));
    used += size.bytes;
    if (!whole) return { data, hasMore: ord < turns.length - 1 || more };
  }
  return { data, hasMore: more };
}

function traceEntry(sessionId: string, turn: TracedTurn, spans: readonly SpanOfTrace[], truncated: boolean): SessionTraceDto {
  return {
    id: turn.id,
    object: 'agent.session.trace',
    session_id: sessionId,
    created_at: Math.floor(turn.createdAt.getTime() / 1000),
    otlp: groupSpans(spans) as unknown as Record<string, unknown>,
    yuxi: { truncated },
  };
}
