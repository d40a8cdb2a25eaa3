import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useMemo, useState } from 'react';
import type { OtlpKeyValue, SessionTrace } from '#libs/sdk';
import { useConsole } from '../caller.js';
import { duration } from '../format.js';
import { attribute, attributeText, kindText, layoutTrace, type SpanLinkRef, traceUrl, type Waterfall, type WaterfallRow } from './trace-layout.js';

/**
 * The session whose turns show their traces, or null: the traces route is the owner's (as every
 * session route), so another owner's page (read through the admin routes) shows none.
 */
export const TraceSource = createContext<{ sessionId: string } | null>(null);

/** Traces per page: the newest turns' first (a trace may be large: each page is bounded by the server too). */
const TRACE_PAGE = 10;
/** The most pages read looking for one turn's trace (the newest 200 turns'): an older turn's is read through the API. */
const MAX_TRACE_PAGES = 20;

/** The deployment's settings for the console, read once (`GET /api/v1/console/settings`). */
function useConsoleSettings() {
  const { client } = useConsole();
  return useQuery({ queryKey: ['console-settings'], queryFn: ({ signal }) => client.consoleSettings({ signal }), staleTime: Infinity });
}

/** The session's traces, page by page until `turnId`'s is found (or the list, or MAX_TRACE_PAGES, ends). Shared by every turn of the page. */
function useTraceOf(sessionId: string, turnId: string, enabled: boolean) {
  const { client } = useConsole();
  const traces = useInfiniteQuery({
    queryKey: ['traces', sessionId],
    enabled,
    queryFn: ({ pageParam, signal }) => client.sessions.traces(sessionId, { order: 'desc', limit: TRACE_PAGE, ...(pageParam ? { after: pageParam } : {}) }, { signal }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const pages = traces.data?.pages ?? [];
  const entry: SessionTrace | undefined = pages.flatMap((page) => page.data).find((trace) => trace.id === turnId);
  const more = enabled && !entry && traces.hasNextPage && pages.length < MAX_TRACE_PAGES;
  const { isFetchingNextPage, fetchNextPage } = traces;
  useEffect(() => {
    if (more && !isFetchingNextPage) void fetchNextPage();
  }, [more, isFetchingNextPage, fetchNextPage]);
  return { traces, entry, searching: more || isFetchingNextPage, searchedAll: !traces.hasNextPage };
}

/**
 * A turn's "Trace": a waterfall of its spans from the session's traces route (collapsed until
 * opened: a trace is read only when asked for), and "Open in trace UI" where the deployment set
 * TRACE_URL_TEMPLATE and the turn's trace id is known (its `yuxi.trace_id`, else the trace's own).
 */
export function TracePanel({ turnId, traceId, label }: { turnId: string | null | undefined; traceId?: string | null; label: string }) {
  const source = useContext(TraceSource);
  if (!source || !turnId) return null;
  return <TraceOfTurn sessionId={source.sessionId} turnId={turnId} traceId={traceId ?? null} label={label} />;
}

function TraceOfTurn({ sessionId, turnId, traceId, label }: { sessionId: string; turnId: string; traceId: string | null; label: string }) {
  const [open, setOpen] = useState(false);
  const template = useConsoleSettings().data?.trace_url_template ?? null;
  const { traces, entry, searching, searchedAll } = useTraceOf(sessionId, turnId, open);
  const layout = useMemo(() => (entry ? layoutTrace(entry.otlp) : null), [entry]);
  const link = traceUrl(template, traceId ?? layout?.traceId);
  const bodyId = `trace-${turnId}`;
  let body = null;
  if (open) {
    if (traces.isError) body = <p className="error">{`Could not read the trace: ${String(traces.error)}`}</p>;
    else if (layout && layout.rows.length > 0) body = <WaterfallView layout={layout} label={label} />;
    else if (traces.isPending || searching) body = <p aria-busy="true">Reading the trace…</p>;
    else
      body = (
        <div className="trace-empty">
          <p className="muted">
            {searchedAll
              ? 'No trace for this turn: tracing is off or no spans were kept (they are kept for TRACE_RETENTION_S, and arrive a few seconds after the turn).'
              : `No trace for this turn among the newest ${TRACE_PAGE * MAX_TRACE_PAGES} turns' traces: read it through the API.`}
          </p>
          <button type="button" className="older" onClick={() => void traces.refetch()} disabled={traces.isFetching}>
            Read again
          </button>
        </div>
      );
  }
  return (
    <div className="trace-panel" role="group" aria-label={`Trace of ${label}`}>
      <div className="trace-actions">
        <button type="button" aria-expanded={open} aria-controls={bodyId} onClick={() => setOpen(!open)}>
          Trace
        </button>
        {link && (
          <a href={link} target="_blank" rel="noopener noreferrer">
            Open in trace UI
          </a>
        )}
      </div>
      <div id={bodyId}>{body}</div>
    </div>
  );
}

/** How a span's position in the trace reads: "at +120 ms, 2.4 s". */
function when(row: WaterfallRow): string {
  return `at +${duration(row.startMs)}, ${duration(row.durationMs)}`;
}

function linkText(link: SpanLinkRef): string {
  return `${link.name ?? `span ${link.spanId}`}${link.reason ? ` (${link.reason})` : ''}`;
}

function WaterfallView({ layout, label }: { layout: Waterfall; label: string }) {
  const [selected, setSelected] = useState<number | null>(null);
  const row = selected === null ? undefined : layout.rows[selected];
  return (
    <div className="waterfall">
      <p className="meta">
        {`${layout.rows.length + layout.omitted} span${layout.rows.length + layout.omitted === 1 ? '' : 's'} · ${duration(layout.totalMs)} · trace `}
        <code>{layout.traceId}</code>
      </p>
      <ul className="trace-services" aria-label="Services">
        {layout.services.map((service, index) => (
          <li key={service}>
            <span className={`swatch svc-${index % 6}`} aria-hidden="true" />
            {service}
          </li>
        ))}
      </ul>
      <ol className="spans" aria-label={`Spans of ${label}`}>
        {layout.rows.map((item, index) => (
          <li key={`${item.span.spanId}-${index}`} className={`span-row${item.error ? ' span-error' : ''}`}>
            <button type="button" aria-pressed={selected === index} onClick={() => setSelected(selected === index ? null : index)}>
              <span className="span-label" style={{ paddingLeft: `${Math.min(item.depth, 12) * 0.9}rem` }}>
                <span className="span-name">{item.span.name}</span>
                <span className="span-service">{item.service}</span>
                {item.error && <span className="span-status">error</span>}
                {item.orphan && <span className="span-hint">parent not exported</span>}
                {item.linkedFrom.length > 0 && <span className="span-hint">{`linked from ${item.linkedFrom.map(linkText).join(', ')}`}</span>}
              </span>
              <span className="span-track" aria-hidden="true">
                <span className={`span-bar svc-${item.serviceIndex % 6}`} style={{ left: `${item.offsetPct}%`, width: `${item.widthPct}%` }} />
              </span>
              <span className="span-duration">{duration(item.durationMs)}</span>
            </button>
          </li>
        ))}
      </ol>
      {layout.omitted > 0 && <p className="muted">{`${layout.omitted} more span${layout.omitted === 1 ? '' : 's'} not drawn: the whole trace is in the traces route.`}</p>}
      {row && <SpanDetail row={row} />}
    </div>
  );
}

function Attributes({ attributes, label }: { attributes: OtlpKeyValue[] | undefined; label: string }) {
  if (!attributes || attributes.length === 0) return null;
  return (
    <dl className="span-attributes" aria-label={label}>
      {attributes.map((entry, index) => (
        <div key={`${entry.key}-${index}`}>
          <dt>{entry.key}</dt>
          <dd>{attributeText(entry.value)}</dd>
        </div>
      ))}
    </dl>
  );
}

function SpanDetail({ row }: { row: WaterfallRow }) {
  const span = row.span;
  const message = span.status?.message;
  const events = span.events ?? [];
  const eventAt = (time: string) => {
    const start = /^\d{1,20}$/.test(span.startTimeUnixNano) && /^\d{1,20}$/.test(time) ? Number(BigInt(time) - BigInt(span.startTimeUnixNano)) / 1e6 : null;
    return start === null ? '' : ` · +${duration(start)} into the span`;
  };
  return (
    <section className="span-detail" aria-label={`Span ${span.name}`}>
      <p>
        <strong>{span.name}</strong>
        {` · ${kindText(span.kind)} · ${row.service} · ${when(row)}`}
        {row.error && <span className="error">{` · error${message ? `: ${message}` : ''}`}</span>}
      </p>
      <p className="muted span-ids">
        {`span ${span.spanId}`}
        {span.parentSpanId ? ` · parent ${span.parentSpanId}${row.orphan ? ' (not exported)' : ''}` : ''}
        {attribute(span.attributes, 'yuxi.turn_id') ? ` · turn ${attribute(span.attributes, 'yuxi.turn_id')}` : ''}
      </p>
      <Attributes attributes={span.attributes} label="Attributes" />
      {events.length > 0 && (
        <>
          <p className="label">Events</p>
          <ul className="span-events">
            {events.map((event, index) => (
              <li key={`${event.name}-${index}`}>
                {`${event.name}${eventAt(event.timeUnixNano)}`}
                <Attributes attributes={event.attributes} label={`Attributes of event ${event.name}`} />
              </li>
            ))}
          </ul>
        </>
      )}
      {row.linksTo.length > 0 && <p>{`Links to ${row.linksTo.map(linkText).join(', ')}`}</p>}
      {row.linkedFrom.length > 0 && <p>{`Linked from ${row.linkedFrom.map(linkText).join(', ')}`}</p>}
    </section>
  );
}
