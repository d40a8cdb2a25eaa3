import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { type AdminSession, AgentsApiError, type AgentsClient, type ControlEvent, type Session } from '#libs/sdk';
import { ErrorState } from '../admin-ui.js';
import { may, useConsole } from '../caller.js';
import { exact, isActive, ownerText, statusText, when } from '../format.js';
import { navigate } from '../router.js';
import { ArtifactsView, EnvironmentSummary } from './Artifacts.js';
import { environmentOf } from './environment.js';
import { ForkSource } from './ForkAction.js';
import { Lineage } from './Lineage.js';
import { useLiveText } from './live.js';
import { MemberTree, type TreeNode, treeFromMembers, treeFromState } from './MemberTree.js';
import { ItemsView, ModelRequestsOf, TurnsView } from './Timeline.js';
import { TraceSource } from './TracePanel.js';
import { WaitpointForm } from './WaitpointForm.js';
import './sessions.css';

/** The newest items shown first (a long history is never loaded whole; older pages on demand). */
const ITEMS_PAGE = 50;
/** Turns per page of the admin timeline (each carries its runs and steps). */
const TURNS_PAGE = 10;
/** How often another owner's running session is read again (its event stream is the owner's only). */
const POLL_MS = 2000;
/** …and one waiting for a person, which may wait for days: a change there is someone's answer, seldom. */
const WAITING_POLL_MS = 15_000;

type AnySession = Session | AdminSession;

function ownerOf(session: AnySession): string | null {
  return 'owner_id' in session.yuxi ? session.yuxi.owner_id : null;
}

/** Whether a session has work that will change what the page shows. */
function busy(session: AnySession | undefined): boolean {
  if (!session) return false;
  return isActive(session.status) || (session.yuxi.queued_input_count > 0 && !session.yuxi.queue_paused);
}

/**
 * One session. A caller with a role reads any owner's session through the admin routes (the
 * session and its timeline of turns → runs → steps); the owner also reads its items and follows
 * its event stream (live text). Another owner's active session is polled instead, and the page
 * says so. Answers and controls go through the owner's route for one's own session, else through
 * the admin events route (operators and administrators; a viewer sees them disabled).
 */
export function SessionPage({ client, sessionId }: { client: AgentsClient; sessionId: string }) {
  const { caller } = useConsole();
  const queries = useQueryClient();
  const operator = may.readEverySession(caller);
  const session = useQuery<AnySession>({
    queryKey: ['session', sessionId, operator],
    queryFn: ({ signal }) => (operator ? client.admin.sessions.get(sessionId, { signal }) : client.sessions.get(sessionId, { signal })),
    // Another owner's active session is read again every POLL_MS (its event stream is the owner's only); not once it has settled.
    refetchInterval: (query) => {
      const read = query.state.data;
      if (!read || !operator || ownerOf(read) === caller.user_id || !busy(read)) return false;
      return read.status === 'requires_action' ? WAITING_POLL_MS : POLL_MS;
    },
  });
  const data = session.data;
  const owned = data !== undefined && (!operator || ownerOf(data) === caller.user_id);
  const polling = data !== undefined && !owned && busy(data);
  const pollMs = data?.status === 'requires_action' ? WAITING_POLL_MS : POLL_MS;
  // Once a polled session settles, its timeline is read once more: the last poll may predate the end.
  const wasPolling = useRef(false);
  useEffect(() => {
    if (wasPolling.current && !polling) void queries.invalidateQueries({ queryKey: ['timeline', sessionId] });
    wasPolling.current = polling;
  }, [polling, queries, sessionId]);

  const timeline = useInfiniteQuery({
    queryKey: ['timeline', sessionId],
    enabled: operator && data !== undefined,
    queryFn: ({ pageParam, signal }) => client.admin.sessions.timeline(sessionId, { order: 'desc', limit: TURNS_PAGE, ...(pageParam ? { after: pageParam } : {}) }, { signal }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
    refetchInterval: polling ? pollMs : false,
  });
  const items = useInfiniteQuery({
    queryKey: ['items', sessionId],
    enabled: owned,
    queryFn: ({ pageParam, signal }) => client.sessions.items(sessionId, { order: 'desc', limit: ITEMS_PAGE, ...(pageParam ? { after: pageParam } : {}) }, { signal }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const state = useQuery({ queryKey: ['state', sessionId], enabled: owned, queryFn: ({ signal }) => client.sessions.state(sessionId, { signal }) });

  const refresh = useCallback(() => {
    for (const key of ['session', 'timeline', 'items', 'state', 'artifacts', 'traces']) void queries.invalidateQueries({ queryKey: [key, sessionId] });
  }, [queries, sessionId]);
  const live = useLiveText(client, sessionId, owned, refresh);
  const traceSource = useMemo(() => (owned ? { sessionId } : null), [owned, sessionId]);
  const [view, setView] = useState<'turns' | 'items' | null>(null);

  if (session.isError) {
    const missing = session.error instanceof AgentsApiError && session.error.status === 404;
    return (
      <div role="alert" className="error-state">
        <h1>Session not found</h1>
        <p>
          {missing
            ? 'No session with this id is visible to this key: it may have been deleted, or belong to another user (reading other users\u2019 sessions takes a role).'
            : `This session could not be loaded (${String(session.error)}). Check the API is up, then reload.`}
        </p>
        <p>
          <a
            href="/console/"
            onClick={(event) => {
              event.preventDefault();
              navigate('/');
            }}
          >
            Back to the sessions
          </a>
        </p>
      </div>
    );
  }
  if (!data) return <p aria-busy="true">Loading the session…</p>;

  const mayAct = owned || may.actOnEverySession(caller);
  const readOnly = mayAct ? null : `Your role (${caller.role ?? 'none'}) may read this session but not act on it: answering and the controls take an operator or an administrator.`;
  const send = (event: ControlEvent) => (owned ? client.sessions.submitEvent(sessionId, event) : client.admin.sessions.submitEvent(sessionId, event));
  const current = data.yuxi.current_turn;
  const waitpoint = current?.status === 'requires_action' ? current.waitpoint : null;
  const turns = (timeline.data?.pages.flatMap((page) => page.data) ?? []).slice().reverse();
  const itemList = (items.data?.pages.flatMap((page) => page.data) ?? []).slice().reverse();
  const shownView = view ?? (operator ? 'turns' : 'items');
  const environment = environmentOf(data);

  const cooperation = state.data?.agent_state.cooperation;
  const members = timeline.data?.pages[0]?.members ?? [];
  // Recorded by the deployment, and this caller an administrator signed in with a user token (no key).
  const mayReadModelRequests = timeline.data?.pages[0]?.model_requests === 'recorded' && may.administer(caller) && caller.key_id === null;
  let tree: { nodes: TreeNode[]; rootId: string; note?: string } | null = null;
  if (cooperation) tree = { nodes: treeFromState(cooperation), rootId: cooperation.root_session_id };
  else if (members.length > 0 || data.yuxi.depth > 0)
    tree = { nodes: treeFromMembers(sessionId, members), rootId: data.yuxi.root_session_id, note: 'The members this session started; each member’s page shows its own.' };

  return (
    <article aria-labelledby="session-title" className="session">
      <header className="session-head">
        <h1 id="session-title">{data.yuxi.title || 'Untitled session'}</h1>
        <p className="meta">
          <span className={`status status-${data.status}`}>{statusText(data.status)}</span>
          {' · '}agent {data.agent.id} ({data.agent.model})
          {'owner' in data.yuxi && ` · owner ${ownerText(data.yuxi.owner)}${owned ? ' (you)' : ''}`}
          {' · '}created <time title={exact(data.created_at)}>{when(data.created_at)}</time>
          {' · '}last active <time title={exact(data.last_active_at)}>{when(data.last_active_at)}</time>
        </p>
        <p className="muted session-id">Session {data.id}</p>
        {data.yuxi.subagent && <p className="muted">{`Member “${data.yuxi.subagent.name}”: ${data.yuxi.subagent.task}`}</p>}
        <Controls
          session={data}
          send={send}
          readOnly={readOnly}
          inTree={tree !== null}
          treeStopped={cooperation ? cooperation.stopped : null}
          onSent={refresh}
          noteReadOnly={!waitpoint}
        />
      </header>
      {current && waitpoint && <WaitpointForm key={waitpoint.id} turnId={current.id} waitpoint={waitpoint} send={send} readOnly={readOnly} onSent={refresh} />}
      {tree && <MemberTree sessionId={sessionId} rootId={tree.rootId} parentId={data.yuxi.parent_session_id} nodes={tree.nodes} note={tree.note} />}
      <Lineage session={data} owned={owned} />
      {environment && <EnvironmentSummary environment={environment} />}
      {/* The files are read through the owner's routes: another owner's session says so rather than show a 404. */}
      {environment &&
        (owned ? (
          <ArtifactsView sessionId={sessionId} />
        ) : (
          <p className="muted">{'The files this session’s agent wrote are read by its owner (the artifacts routes).'}</p>
        ))}
      <ForkSource.Provider value={owned ? { sessionId, current: current ?? null } : null}>
        <TraceSource.Provider value={traceSource}>
        <section aria-labelledby="timeline-title" className="timeline">
          <h2 id="timeline-title">Timeline</h2>
          {!owned && (
            <p className="muted">
              {polling
                ? `Not your session, so no live text: this view refreshes every ${pollMs / 1000} seconds while the session is active.`
                : `Not your session: this view shows it as last read, and refreshes every ${POLL_MS / 1000} seconds while it runs.`}
            </p>
          )}
          {operator && owned && (
            <fieldset className="view-switch">
              <legend>Show</legend>
              <div className="field-check">
                <input type="radio" id="view-turns" name="view" checked={shownView === 'turns'} onChange={() => setView('turns')} />
                <label htmlFor="view-turns">Turns, runs and steps</label>
              </div>
              <div className="field-check">
                <input type="radio" id="view-items" name="view" checked={shownView === 'items'} onChange={() => setView('items')} />
                <label htmlFor="view-items">Messages</label>
              </div>
            </fieldset>
          )}
          {shownView === 'turns' ? (
            <Loaded query={timeline} what="the timeline">
              <ModelRequestsOf.Provider value={mayReadModelRequests ? sessionId : null}>
                <TurnsView turns={turns} live={live} older={{ hasMore: timeline.hasNextPage, loading: timeline.isFetchingNextPage, load: () => void timeline.fetchNextPage() }} />
              </ModelRequestsOf.Provider>
            </Loaded>
          ) : (
            <Loaded query={items} what="the messages">
              <ItemsView items={itemList} live={live} older={{ hasMore: items.hasNextPage, loading: items.isFetchingNextPage, load: () => void items.fetchNextPage() }} />
            </Loaded>
          )}
        </section>
        </TraceSource.Provider>
      </ForkSource.Provider>
    </article>
  );
}

function Loaded({ query, what, children }: { query: { isError: boolean; isPending: boolean; error: unknown; refetch: () => unknown }; what: string; children: ReactNode }) {
  if (query.isError) return <ErrorState what={what} error={query.error} onRetry={() => void query.refetch()} />;
  if (query.isPending) return <p aria-busy="true">Loading {what}…</p>;
  return <>{children}</>;
}

interface ControlsProps {
  session: AnySession;
  send: (event: ControlEvent) => Promise<unknown>;
  readOnly: string | null;
  inTree: boolean;
  /** From the owner's `/state`; null when not known (another owner's session). */
  treeStopped: boolean | null;
  onSent: () => void;
  /** Whether to say why the controls are disabled (the waitpoint form says it when there is one). */
  noteReadOnly: boolean;
}

/** Cancel the turn, continue a paused queue, stop or continue a cooperation tree. */
function Controls({ session, send, readOnly, inTree, treeStopped, onSent, noteReadOnly }: ControlsProps) {
  const [message, setMessage] = useState<{ text: string; error: boolean } | null>(null);
  const [busyWith, setBusyWith] = useState<string | null>(null);
  const current = session.yuxi.current_turn;
  const cancellable = current && (current.status === 'queued' || current.status === 'in_progress' || current.status === 'requires_action');
  const paused = session.yuxi.queue_paused;
  const act = (label: string, done: string, event: ControlEvent) => {
    setBusyWith(label);
    setMessage(null);
    send(event).then(
      () => {
        setMessage({ text: done, error: false });
        setBusyWith(null);
        onSent();
      },
      (caught: unknown) => {
        setMessage({ text: `${label} was not accepted: ${caught instanceof Error ? caught.message : String(caught)}.`, error: true });
        setBusyWith(null);
      },
    );
  };
  const disabled = readOnly !== null || busyWith !== null;
  const buttons = [
    cancellable && (
      <button key="cancel" type="button" className="danger" disabled={disabled} onClick={() => act('Cancel turn', 'Cancellation requested.', { type: 'agent.session.input.cancel', yuxi: { turn_id: current.id } })}>
        Cancel turn
      </button>
    ),
    paused && treeStopped !== true && (
      <button key="continue" type="button" disabled={disabled} onClick={() => act('Continue', 'The queue continues.', { type: 'yuxi.session.input.continue' })}>
        Continue
      </button>
    ),
    inTree && treeStopped !== true && (
      <button key="stop-tree" type="button" className="danger" disabled={disabled} onClick={() => act('Stop tree', 'The tree is stopping.', { type: 'yuxi.session.tree.stop' })}>
        Stop tree
      </button>
    ),
    inTree && (treeStopped ?? paused) && (
      <button key="continue-tree" type="button" disabled={disabled} onClick={() => act('Continue tree', 'The tree continues.', { type: 'yuxi.session.tree.continue' })}>
        Continue tree
      </button>
    ),
  ].filter(Boolean);
  return (
    <>
      {(paused || session.yuxi.queued_input_count > 0) && (
        <p className="note">
          {session.yuxi.queued_input_count} queued input{session.yuxi.queued_input_count === 1 ? '' : 's'}
          {paused ? '; the queue is paused (after a failed, cancelled or stopped turn): Continue runs the next.' : '.'}
        </p>
      )}
      {buttons.length > 0 && (
        <div className="controls" role="group" aria-label="Session controls">
          {buttons}
        </div>
      )}
      {buttons.length > 0 && readOnly && noteReadOnly && <p className="note">{readOnly}</p>}
      <p role={message?.error ? 'alert' : 'status'} className={message?.error ? 'error' : 'muted'}>
        {message?.text}
      </p>
    </>
  );
}

