import { useInfiniteQuery } from '@tanstack/react-query';
import { type FormEvent, useCallback } from 'react';
import type { InboxWaitpoint, WaitpointKind } from '#libs/sdk';
import { ErrorState } from '../admin-ui.js';
import { may, useConsole } from '../caller.js';
import { article, exact, ownerText, shortId, statusText, when } from '../format.js';
import { navigate } from '../router.js';
import { useSearchParams } from './search-params.js';
import { type Column, VirtualTable } from './VirtualTable.js';
import './sessions.css';

const PAGE = 50;
const KINDS: { value: WaitpointKind; label: string }[] = [
  { value: 'question', label: 'Questions' },
  { value: 'approval', label: 'Approvals' },
  { value: 'client_tool', label: 'Client tool calls' },
  { value: 'cooperation', label: 'Coordinators waiting for members' },
];

/** What a waitpoint asks, in one line: its questions, or the tools it waits on. */
function asks(waitpoint: InboxWaitpoint): string {
  if (waitpoint.questions?.length) return waitpoint.questions.map((q) => q.question).join(' · ');
  if (waitpoint.tool_calls?.length) {
    const names = waitpoint.tool_calls.map((call) => call.name).join(', ');
    return waitpoint.kind === 'approval' ? `Approve ${names}` : waitpoint.kind === 'client_tool' ? `Result of ${names}` : `Waits via ${names}`;
  }
  return `${article(waitpoint.kind) === 'an' ? 'An' : 'A'} ${statusText(waitpoint.kind)} waitpoint`;
}

const COLUMNS: Column<InboxWaitpoint>[] = [
  {
    header: 'Asks',
    width: '34%',
    cell: (w) => (
      <a
        href={`/console/sessions/${w.session_id}`}
        onClick={(event) => {
          if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
          event.preventDefault();
          navigate(`/sessions/${w.session_id}`);
        }}
      >
        {asks(w)}
      </a>
    ),
    title: asks,
  },
  { header: 'Kind', width: '13%', cell: (w) => statusText(w.kind) },
  { header: 'Session', width: '13%', cell: (w) => shortId(w.session_id), title: (w) => w.session_id },
  { header: 'Owner', width: '14%', cell: (w) => ownerText(w.owner), title: (w) => w.owner_id },
  { header: 'Agent', width: '13%', cell: (w) => w.agent_id },
  {
    header: 'Waiting since',
    width: '13%',
    cell: (w) => <time dateTime={new Date(w.created_at * 1000).toISOString()}>{when(w.created_at)}</time>,
    title: (w) => exact(w.created_at),
  },
];

/** Open waitpoints across every owner's sessions (the operators' inbox), newest first, a cursor page at a time. */
export function InboxPage() {
  const { client, caller } = useConsole();
  const [params, setParams] = useSearchParams();
  const kind = (params.get('kind') ?? '') as WaitpointKind | '';
  const allowed = may.readEverySession(caller);
  const inbox = useInfiniteQuery({
    queryKey: ['inbox', kind],
    enabled: allowed,
    queryFn: ({ pageParam, signal }) => client.admin.waitpoints({ status: 'open', limit: PAGE, ...(kind ? { kind } : {}), ...(pageParam ? { after: pageParam } : {}) }, { signal }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
    refetchInterval: 10_000,
  });
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = inbox;
  const loadMore = useCallback(() => {
    if (hasNextPage && !isFetchingNextPage) void fetchNextPage();
  }, [hasNextPage, isFetchingNextPage, fetchNextPage]);
  const rows = inbox.data?.pages.flatMap((page) => page.data) ?? [];
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setParams({ kind: String(new FormData(event.currentTarget).get('kind') ?? '') });
  };

  return (
    <section aria-labelledby="inbox-title" className="sessions">
      <h1 id="inbox-title">Inbox</h1>
      {!allowed ? (
        <p className="empty">The inbox lists what waits for a person across every user&apos;s sessions: it takes a role (viewer, operator or administrator).</p>
      ) : (
        <>
          <p className="muted">Turns waiting for a person or a client, newest first. Open one to answer it. The list refreshes every 10 seconds.</p>
          <form key={kind} className="filters" role="search" aria-label="Filter the inbox" onSubmit={submit}>
            <div className="field field-wide">
              <label htmlFor="inbox-kind">Kind</label>
              <select id="inbox-kind" name="kind" defaultValue={kind}>
                <option value="">Waiting for a person or a client</option>
                {KINDS.map((option) => (
                  <option key={option.value} value={option.value}>
                    {option.label}
                  </option>
                ))}
              </select>
            </div>
            <div className="filter-actions">
              <button type="submit">Apply filter</button>
            </div>
          </form>
          {inbox.isError && <ErrorState what="the inbox" error={inbox.error} onRetry={() => void inbox.refetch()} />}
          {inbox.isPending && <p aria-busy="true">Loading the inbox…</p>}
          {inbox.isSuccess && rows.length === 0 && <p className="empty">Nothing waits{kind ? ` of this kind` : ''}: no open question, approval or client tool call. New ones show here.</p>}
          {rows.length > 0 && (
            <>
              <VirtualTable label="Open waitpoints, newest first" rows={rows} rowKey={(w) => w.id} columns={COLUMNS} hasMore={hasNextPage} onNearEnd={loadMore} />
              <div className="table-foot">
                <p className="muted" role="status">
                  {rows.length} open {rows.length === 1 ? 'waitpoint' : 'waitpoints'} loaded{hasNextPage ? '; more load as you scroll' : ''}.
                </p>
                {hasNextPage && (
                  <button type="button" onClick={loadMore} disabled={isFetchingNextPage}>
                    {isFetchingNextPage ? 'Loading…' : 'Load more'}
                  </button>
                )}
              </div>
            </>
          )}
        </>
      )}
    </section>
  );
}
