import { useInfiniteQuery } from '@tanstack/react-query';
import type { AgentsClient, SessionList } from '#libs/sdk';
import { exact, when } from '../format.js';
import { navigate } from '../router.js';

const PAGE = 50;

/** The caller's sessions, newest first, a cursor page at a time (never the whole list). */
export function SessionsPage({ client }: { client: AgentsClient }) {
  const sessions = useInfiniteQuery({
    queryKey: ['sessions'],
    queryFn: ({ pageParam }): Promise<SessionList> => client.sessions.list({ limit: PAGE, ...(pageParam ? { after: pageParam } : {}) }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = sessions.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section aria-labelledby="sessions-title">
      <h1 id="sessions-title">Sessions</h1>
      {sessions.isError && (
        <p role="alert" className="error">
          Could not load sessions: {String(sessions.error)}. Check the API is up, then reload.
        </p>
      )}
      {sessions.isSuccess && rows.length === 0 && <p className="empty">No sessions yet. Create one through the API or the SDK; it shows here.</p>}
      {rows.length > 0 && (
        <table>
          <caption className="visually-hidden">Sessions, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">Status</th>
              <th scope="col">Agent</th>
              <th scope="col">Last active</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((session) => (
              <tr key={session.id}>
                <td>
                  <a
                    href={`/console/sessions/${session.id}`}
                    onClick={(event) => {
                      event.preventDefault();
                      navigate(`/sessions/${session.id}`);
                    }}
                  >
                    {session.yuxi.title || session.id}
                  </a>
                </td>
                <td>
                  <span className={`status status-${session.status}`}>{session.status.replace('_', ' ')}</span>
                </td>
                <td>{session.agent.id}</td>
                <td title={exact(session.last_active_at)}>{when(session.last_active_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {sessions.hasNextPage && (
        <button type="button" onClick={() => void sessions.fetchNextPage()} disabled={sessions.isFetchingNextPage}>
          Load more
        </button>
      )}
    </section>
  );
}
