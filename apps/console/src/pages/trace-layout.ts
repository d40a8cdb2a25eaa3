import type { OtlpAnyValue, OtlpKeyValue, OtlpSpan, OtlpTraceData } from '#libs/sdk';

// The waterfall of one turn's trace, as numbers the page draws (no DOM here: test/unit/trace-layout.test.ts).
// Every step is linear in the spans: one pass to index them, one to hang children on parents, one
// walk of the tree (iterative: a deep chain of spans never overflows the stack).

/** The most rows drawn: a bigger trace says how many spans it left out (its whole OTLP is one API call away). */
export const MAX_WATERFALL_ROWS = 1000;

/** A link between two spans: the other span's ids, its name when it is in this trace, and why (`yuxi.link.reason`, e.g. a takeover). */
export interface SpanLinkRef {
  traceId: string;
  spanId: string;
  name: string | null;
  reason: string | null;
}

export interface WaterfallRow {
  span: OtlpSpan;
  /** The resource's `service.name` (the process that made the span): "unknown service" when it has none. */
  service: string;
  /** The service's place among the trace's services (first seen first): its colour. */
  serviceIndex: number;
  /** 0 for a root (or an orphan), its parent's plus one below. */
  depth: number;
  /** Where the bar starts and how long it is, in percent of the trace (0–100). */
  offsetPct: number;
  widthPct: number;
  /** Milliseconds from the trace's first span's start; the span's own length. */
  startMs: number;
  durationMs: number;
  /** The span names a parent the trace does not hold (a worker died before it exported it, or it was not kept). */
  orphan: boolean;
  error: boolean;
  /** The spans this one links to (its `links`). */
  linksTo: SpanLinkRef[];
  /** The spans that link to this one, or (an orphan) to its missing parent: a takeover's run links to the run it took over. */
  linkedFrom: SpanLinkRef[];
}

export interface Waterfall {
  /** The trace's id (its first span's); null when the trace holds no span. */
  traceId: string | null;
  /** From the first span's start to the last span's end, in milliseconds. */
  totalMs: number;
  rows: WaterfallRow[];
  services: string[];
  /** Spans beyond MAX_WATERFALL_ROWS, not drawn. */
  omitted: number;
}

const NANOS = /^\d{1,20}$/;
const NO_PARENT = /^0*$/;

/** Unix nanoseconds (a string, as OTLP JSON writes 64-bit integers) as a bigint; null when not one. */
function nanos(value: unknown): bigint | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  return typeof value === 'string' && NANOS.test(value) ? BigInt(value) : null;
}

/** A parent id that names no parent: absent, empty, or all zeros (as some encoders write it). */
function parentOf(span: OtlpSpan): string | null {
  const parent = span.parentSpanId;
  return typeof parent === 'string' && !NO_PARENT.test(parent) ? parent : null;
}

/** An attribute's value as text: strings as they are, arrays joined, nested lists as key=value. */
export function attributeText(value: OtlpAnyValue | undefined): string {
  if (!value) return '';
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return String(value.intValue);
  if (value.doubleValue !== undefined) return String(value.doubleValue);
  if (value.boolValue !== undefined) return String(value.boolValue);
  if (value.arrayValue) return `[${(value.arrayValue.values ?? []).map((item) => attributeText(item)).join(', ')}]`;
  if (value.kvlistValue) return `{${(value.kvlistValue.values ?? []).map((entry) => `${entry.key}=${attributeText(entry.value)}`).join(', ')}}`;
  if (value.bytesValue !== undefined) return value.bytesValue;
  return '';
}

/** One attribute's text by its key, or null. */
export function attribute(attributes: OtlpKeyValue[] | undefined, key: string): string | null {
  const found = attributes?.find((entry) => entry.key === key);
  return found ? attributeText(found.value) : null;
}

/** Whether the span ended in error (status code 2, or its enum name). */
export function isError(span: OtlpSpan): boolean {
  const code = span.status?.code;
  return code === 2 || code === 'STATUS_CODE_ERROR' || code === '2';
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];

/** The span's kind in words ("server", "client", …). */
export function kindText(kind: number | string | undefined): string {
  if (typeof kind === 'number') return KINDS[kind] ?? 'unspecified';
  if (typeof kind === 'string') return kind.replace(/^SPAN_KIND_/, '').toLowerCase() || 'unspecified';
  return 'unspecified';
}

interface Node {
  span: OtlpSpan;
  service: string;
  start: bigint | null;
  end: bigint | null;
  children: number[];
}

/** Lays out one trace: spans as a tree (children under parents, by start), bars relative to the first span. */
export function layoutTrace(received: unknown, maxRows = MAX_WATERFALL_ROWS): Waterfall {
  // `otlp` is free-form in the contract (the upstream shape) and any producer's: every field is read as optional.
  const otlp = received as OtlpTraceData | null | undefined;
  const nodes: Node[] = [];
  const services: string[] = [];
  const serviceIndex = new Map<string, number>();
  for (const resource of otlp?.resourceSpans ?? []) {
    const service = attribute(resource.resource?.attributes, 'service.name') || 'unknown service';
    if (!serviceIndex.has(service)) {
      serviceIndex.set(service, services.length);
      services.push(service);
    }
    for (const scope of resource.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) nodes.push({ span, service, start: nanos(span.startTimeUnixNano), end: nanos(span.endTimeUnixNano), children: [] });
    }
  }
  if (nodes.length === 0) return { traceId: null, totalMs: 0, rows: [], services, omitted: 0 };

  // The first span with an id wins it: a duplicate is drawn, but nothing hangs under it.
  const byId = new Map<string, number>();
  nodes.forEach((node, index) => {
    if (!byId.has(node.span.spanId)) byId.set(node.span.spanId, index);
  });
  let first: bigint | null = null;
  let last: bigint | null = null;
  for (const node of nodes) {
    if (node.start !== null && (first === null || node.start < first)) first = node.start;
    const end = node.end ?? node.start;
    if (end !== null && (last === null || end > last)) last = end;
  }
  const origin = first ?? 0n;
  const totalNs = last !== null && last > origin ? last - origin : 0n;

  const roots: number[] = [];
  nodes.forEach((node, index) => {
    const parent = parentOf(node.span);
    const parentIndex = parent === null ? undefined : byId.get(parent);
    if (parentIndex === undefined || parentIndex === index) roots.push(index);
    else nodes[parentIndex].children.push(index);
  });
  const byStart = (a: number, b: number) => {
    const x = nodes[a].start ?? origin;
    const y = nodes[b].start ?? origin;
    return x < y ? -1 : x > y ? 1 : a - b;
  };

  // Who links to whom: by the linked span's id, so that a missing parent's links are found too.
  const linkedFrom = new Map<string, SpanLinkRef[]>();
  for (const node of nodes) {
    for (const link of node.span.links ?? []) {
      const list = linkedFrom.get(link.spanId) ?? [];
      list.push({ traceId: node.span.traceId, spanId: node.span.spanId, name: node.span.name, reason: attribute(link.attributes, 'yuxi.link.reason') });
      linkedFrom.set(link.spanId, list);
    }
  }

  const rows: WaterfallRow[] = [];
  let omitted = 0;
  const visited = new Uint8Array(nodes.length);
  const toMs = (ns: bigint) => Number(ns) / 1e6;
  const pct = (ns: bigint) => (totalNs === 0n ? 0 : Math.min(100, Math.max(0, (Number(ns) / Number(totalNs)) * 100)));
  const emit = (index: number, depth: number, unrooted: boolean) => {
    if (rows.length >= maxRows) {
      omitted++;
      return;
    }
    const node = nodes[index];
    const start = node.start ?? origin;
    const end = node.end !== null && node.end > start ? node.end : start;
    const parent = parentOf(node.span);
    const orphan = unrooted || (parent !== null && !byId.has(parent));
    rows.push({
      span: node.span,
      service: node.service,
      serviceIndex: serviceIndex.get(node.service) ?? 0,
      depth,
      offsetPct: pct(start - origin),
      // A trace of one instant draws its spans whole rather than as nothing.
      widthPct: totalNs === 0n ? 100 : pct(end - start),
      startMs: toMs(start - origin),
      durationMs: toMs(end - start),
      orphan,
      error: isError(node.span),
      linksTo: (node.span.links ?? []).map((link) => {
        const target = byId.get(link.spanId);
        return { traceId: link.traceId, spanId: link.spanId, name: target === undefined ? null : nodes[target].span.name, reason: attribute(link.attributes, 'yuxi.link.reason') };
      }),
      linkedFrom: [...(linkedFrom.get(node.span.spanId) ?? []), ...(orphan && parent !== null && !byId.has(parent) ? (linkedFrom.get(parent) ?? []) : [])],
    });
  };
  /** Depth first from `top`, children by start; `unrooted`: the top is in a ring of parents, reached from no root. */
  const walk = (top: number[], unrooted: boolean) => {
    const stack: [number, number][] = top
      .slice()
      .sort(byStart)
      .reverse()
      .map((index) => [index, 0]);
    while (stack.length > 0) {
      const [index, depth] = stack.pop()!;
      if (visited[index]) continue;
      visited[index] = 1;
      emit(index, depth, unrooted && depth === 0);
      const children = nodes[index].children.slice().sort(byStart);
      for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], depth + 1]);
    }
  };
  walk(roots, false);
  // Spans whose parents name each other in a ring are reached from no root: drawn at the root too, as orphans.
  for (let index = 0; index < nodes.length; index++) if (!visited[index]) walk([index], true);
  return { traceId: nodes[0].span.traceId || null, totalMs: toMs(totalNs), rows, services, omitted };
}

const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * The trace UI's address of a trace: TRACE_URL_TEMPLATE with `{trace_id}` replaced. Null when there
 * is no template, no `{trace_id}` in it, no valid trace id, or the result is not an http(s) address
 * (a template is the deployment's, but the console never links a `javascript:` one).
 */
export function traceUrl(template: string | null | undefined, traceId: string | null | undefined): string | null {
  if (!template || !template.includes('{trace_id}') || !traceId || !TRACE_ID.test(traceId) || /^0+$/.test(traceId)) return null;
  const address = template.split('{trace_id}').join(traceId);
  try {
    const url = new URL(address);
    return url.protocol === 'https:' || url.protocol === 'http:' ? address : null;
  } catch {
    return null;
  }
}

/** A turn's `yuxi.trace_id` where the view carries one (the turn views; not every view does), else null. */
export function turnTraceId(turn: unknown): string | null {
  const yuxi = (turn as { yuxi?: { trace_id?: unknown } } | null)?.yuxi;
  const id = yuxi?.trace_id;
  return typeof id === 'string' && TRACE_ID.test(id) ? id : null;
}
