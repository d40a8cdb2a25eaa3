import { useQuery } from '@tanstack/react-query';
import { AgentsApiError, type ForkedFrom } from '#libs/sdk';
import { useConsole } from '../caller.js';
import { exact, shortId, when } from '../format.js';
import { link } from '../router.js';

/** The forks listed (the first page, newest first); more are read through the API. */
const FORKS_PAGE = 20;

/** A session's `yuxi.forked_from`, null on a session that is no fork. */
function forkedFrom(session: { yuxi: object }): ForkedFrom | null {
  return (session.yuxi as { forked_from?: ForkedFrom | null }).forked_from ?? null;
}

/**
 * The source's title, read by the owner (its id is shown until then, and to others); a deleted
 * source answers 404, which the region says (the fork keeps the history it shared).
 */
function useSource(sessionId: string, from: ForkedFrom | null): { title: string | null; gone: boolean } {
  const { client } = useConsole();
  const read = useQuery({
    queryKey: ['fork-source', sessionId],
    enabled: from !== null,
    retry: false,
    queryFn: async ({ signal }) => {
      try {
        return { title: (await client.sessions.get(from!.session_id, { signal })).yuxi.title || null, gone: false };
      } catch (error) {
        if (error instanceof AgentsApiError && error.status === 404) return { title: null, gone: true };
        throw error;
      }
    },
  });
  return read.data ?? { title: null, gone: false };
}

function SessionLink({ id, children }: { id: string; children: string }) {
  return <a {...link(`/sessions/${id}`)}>{children}</a>;
}

/**
 * Where this session was forked from (its source and the turn), and the sessions forked from it
 * (`GET /sessions?forked_from=`: the caller's own sessions, so only on the owner's page). Shown
 * only when there is one or the other.
 */
export function Lineage({ session, owned }: { session: { id: string; yuxi: object }; owned: boolean }) {
  const { client } = useConsole();
  const from = forkedFrom(session);
  const forks = useQuery({
    queryKey: ['forks', session.id],
    enabled: owned,
    queryFn: ({ signal }) => client.sessions.list({ forked_from: session.id, limit: FORKS_PAGE }, { signal }),
  });
  const source = useSource(session.id, owned ? from : null);
  const list = forks.data?.data ?? [];
  if (!from && list.length === 0) return null;
  return (
    <section aria-labelledby="lineage-title" className="lineage">
      <h2 id="lineage-title">Lineage</h2>
      {from && (
        <p>
          Forked from{' '}
          {source.gone ? (
            `a deleted session (${shortId(from.session_id)})`
          ) : (
            <SessionLink id={from.session_id}>{source.title ? `${source.title} (${shortId(from.session_id)})` : `session ${shortId(from.session_id)}`}</SessionLink>
          )}
          {` ${from.position} turn `}
          <code title={from.turn_id}>{shortId(from.turn_id)}</code>
          <span className="muted">{source.gone ? ' · the history it shared stays this session\u2019s' : ' · its history up to there is shared, not copied'}</span>
        </p>
      )}
      {list.length > 0 && (
        <>
          <h3>Forks</h3>
          <ul aria-label="Forks of this session">
            {list.map((fork) => {
              const point = forkedFrom(fork);
              return (
                <li key={fork.id}>
                  <SessionLink id={fork.id}>{`${fork.yuxi.title || 'Untitled session'} (${shortId(fork.id)})`}</SessionLink>
                  <span className="muted">
                    {point && ` · ${point.position} turn ${shortId(point.turn_id)}`}
                    {' · created '}
                    <time title={exact(fork.created_at)}>{when(fork.created_at)}</time>
                  </span>
                </li>
              );
            })}
          </ul>
          {forks.data?.has_more && <p className="muted">{`The first ${FORKS_PAGE} forks; the others are listed by the API (forked_from).`}</p>}
        </>
      )}
    </section>
  );
}
