import { useInfiniteQuery } from '@tanstack/react-query';
import { type FormEvent, useCallback } from 'react';
import type { AdminSession, AgentsClient, SearchSessionsParams, Session, SessionStatus } from '#libs/sdk';
import { ErrorState } from '../admin-ui.js';
import { may, useConsole } from '../caller.js';
import { exact, ownerText, shortId, statusText, when } from '../format.js';
import { navigate } from '../router.js';
import { useSearchParams } from './search-params.js';
import { type Column, VirtualTable } from './VirtualTable.js';
import './sessions.css';

const PAGE = 50;
const STATUSES: SessionStatus[] = ['idle', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled'];
/** The filters of the explorer, as they are named in the address bar and in the API. */
const FILTERS = ['q', 'status', 'agent_id', 'owner_id', 'waiting', 'error_code'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

/**
 * The sessions explorer. A caller with a role (viewer, operator, admin) searches every owner's
 * sessions (`GET /admin/sessions`), a product user lists their own; both a cursor page at a time,
 * loaded as the table scrolls (never the whole history), rendered as a windowed table.
 */
export function SessionsPage({ client }: { client: AgentsClient }) {
  const { caller } = useConsole();
  return may.readEverySession(caller) ? <EverySession client={client} /> : <OwnSessions client={client} />;
}

function EverySession({ client }: { client: AgentsClient }) {
  const [params, setParams] = useSearchParams();
  const filters: Filters = Object.fromEntries(FILTERS.map((name) => [name, params.get(name) ?? undefined]).filter(([, value]) => value));
  const sessions = useInfiniteQuery({
    queryKey: ['admin-sessions', filters],
    queryFn: ({ pageParam, signal }) => client.admin.sessions.search({ ...(filters as SearchSessionsParams), limit: PAGE, ...(pageParam ? { after: pageParam } : {}) }, { signal }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = sessions.data?.pages.flatMap((page) => page.data) ?? [];
  const filtered = Object.keys(filters).length > 0;
  return (
    <section aria-labelledby="sessions-title" className="sessions">
      <h1 id="sessions-title">Sessions</h1>
      <p className="muted">Every owner&apos;s sessions, newest first.</p>
      <FilterForm key={params.toString()} filters={filters} onApply={setParams} />
      <Results
        label="Sessions, newest first"
        query={sessions}
        rows={rows}
        columns={ADMIN_COLUMNS}
        empty={filtered ? 'No session matches these filters. Clear a filter, or search for part of a title or the start of a session id.' : 'No sessions yet. Sessions created through the API or the SDK show here.'}
      />
    </section>
  );
}

function OwnSessions({ client }: { client: AgentsClient }) {
  const [params, setParams] = useSearchParams();
  const agentId = params.get('agent_id') ?? '';
  const sessions = useInfiniteQuery({
    queryKey: ['sessions', agentId],
    queryFn: ({ pageParam, signal }) => client.sessions.list({ limit: PAGE, ...(agentId ? { agent_id: agentId } : {}), ...(pageParam ? { after: pageParam } : {}) }, { signal }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = sessions.data?.pages.flatMap((page) => page.data) ?? [];
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setParams({ agent_id: String(new FormData(event.currentTarget).get('agent_id') ?? '').trim() });
  };
  return (
    <section aria-labelledby="sessions-title" className="sessions">
      <h1 id="sessions-title">Sessions</h1>
      <p className="muted">Your sessions, newest first.</p>
      <form key={agentId} className="filters" role="search" aria-label="Filter sessions" onSubmit={submit}>
        <div className="field">
          <label htmlFor="filter-agent">Agent id</label>
          <input id="filter-agent" name="agent_id" defaultValue={agentId} />
        </div>
        <div className="filter-actions">
          <button type="submit">Apply filters</button>
        </div>
      </form>
      <Results
        label="Your sessions, newest first"
        query={sessions}
        rows={rows}
        columns={OWN_COLUMNS}
        empty={agentId ? 'None of your sessions runs this agent. Clear the agent filter to see them all.' : 'No sessions yet. Create one through the API or the SDK; it shows here.'}
      />
    </section>
  );
}

function FilterForm({ filters, onApply }: { filters: Filters; onApply: (next: Filters) => void }) {
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next: Filters = {};
    for (const name of FILTERS) {
      const value = form.get(name);
      if (typeof value === 'string' && value.trim()) next[name] = value.trim();
    }
    onApply(next);
  };
  return (
    <form className="filters" role="search" aria-label="Filter sessions" onSubmit={submit}>
      <div className="field field-wide">
        <label htmlFor="filter-q">Search titles</label>
        <input id="filter-q" name="q" type="search" defaultValue={filters.q} aria-describedby="filter-q-hint" />
        <span id="filter-q-hint" className="hint">
          Part of a title, or the start of a session id
        </span>
      </div>
      <div className="field">
        <label htmlFor="filter-status">Status</label>
        <select id="filter-status" name="status" defaultValue={filters.status ?? ''}>
          <option value="">Any status</option>
          {STATUSES.map((status) => (
            <option key={status} value={status}>
              {statusText(status)}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-agent">Agent id</label>
        <input id="filter-agent" name="agent_id" defaultValue={filters.agent_id} />
      </div>
      <div className="field">
        <label htmlFor="filter-owner">Owner id</label>
        <input id="filter-owner" name="owner_id" defaultValue={filters.owner_id} placeholder="a user id (uuid)" />
      </div>
      <div className="field">
        <label htmlFor="filter-error">Error code</label>
        <input id="filter-error" name="error_code" defaultValue={filters.error_code} placeholder="e.g. model_timeout" />
      </div>
      <div className="field field-check">
        <input id="filter-waiting" name="waiting" type="checkbox" value="true" defaultChecked={filters.waiting === 'true'} />
        <label htmlFor="filter-waiting">Waiting for a person</label>
      </div>
      <div className="filter-actions">
        <button type="submit">Apply filters</button>
        <button type="button" onClick={() => onApply({})} disabled={Object.keys(filters).length === 0}>
          Clear filters
        </button>
      </div>
    </form>
  );
}

interface Pages<T> {
  isError: boolean;
  isSuccess: boolean;
  isPending: boolean;
  error: unknown;
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => unknown;
  refetch: () => unknown;
  data?: { pages: { data: T[] }[] };
}

/** The table (or the empty, loading or error state) of a cursor-paged list of sessions. */
function Results<T extends Session | AdminSession>({ label, query, rows, columns, empty }: { label: string; query: Pages<T>; rows: T[]; columns: Column<T>[]; empty: string }) {
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = query;
  const loadMore = useCallback(() => {
    if (hasNextPage && !isFetchingNextPage) void fetchNextPage();
  }, [hasNextPage, isFetchingNextPage, fetchNextPage]);
  if (query.isError) {
    return (
      <ErrorState what="sessions" error={query.error} onRetry={() => void query.refetch()}>
        Check the filters (an owner id is a uuid), that the API is up, and that this key may still read these sessions; then try again.
      </ErrorState>
    );
  }
  if (query.isPending) return <p aria-busy="true">Loading sessions…</p>;
  if (rows.length === 0) return <p className="empty">{empty}</p>;
  return (
    <>
      <VirtualTable label={label} rows={rows} rowKey={(row) => row.id} columns={columns} hasMore={hasNextPage} onNearEnd={loadMore} />
      <div className="table-foot">
        <p className="muted" role="status">
          {rows.length} {rows.length === 1 ? 'session' : 'sessions'} loaded{hasNextPage ? '; more load as you scroll' : ', all of them'}.
        </p>
        {hasNextPage && (
          <button type="button" onClick={loadMore} disabled={isFetchingNextPage}>
            {isFetchingNextPage ? 'Loading…' : 'Load more'}
          </button>
        )}
      </div>
    </>
  );
}

function SessionLink({ session }: { session: Session | AdminSession }) {
  return (
    <a
      href={`/console/sessions/${session.id}`}
      onClick={(event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        navigate(`/sessions/${session.id}`);
      }}
    >
      {session.yuxi.title || `Untitled session ${shortId(session.id)}`}
    </a>
  );
}

function StatusBadge({ status }: { status: SessionStatus }) {
  return <span className={`status status-${status}`}>{statusText(status)}</span>;
}

const titleColumn: Column<Session | AdminSession> = { header: 'Title', width: '32%', cell: (s) => <SessionLink session={s} />, title: (s) => s.yuxi.title || s.id };
const statusColumn: Column<Session | AdminSession> = { header: 'Status', width: '15%', cell: (s) => <StatusBadge status={s.status} /> };
const agentColumn: Column<Session | AdminSession> = { header: 'Agent', width: '17%', cell: (s) => s.agent.id, title: (s) => `${s.agent.id} (${s.agent.model})` };
const activeColumn: Column<Session | AdminSession> = {
  header: 'Last active',
  width: '16%',
  cell: (s) => <time dateTime={new Date(s.last_active_at * 1000).toISOString()}>{when(s.last_active_at)}</time>,
  title: (s) => exact(s.last_active_at),
};

const ADMIN_COLUMNS: Column<AdminSession>[] = [
  titleColumn,
  { header: 'Owner', width: '20%', cell: (s) => ownerText(s.yuxi.owner), title: (s) => `owner ${s.yuxi.owner_id}` },
  agentColumn,
  statusColumn,
  activeColumn,
];
const OWN_COLUMNS: Column<Session>[] = [titleColumn, agentColumn, statusColumn, activeColumn];
