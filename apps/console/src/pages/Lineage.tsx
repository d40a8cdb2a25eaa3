import { useQuery } from '@tanstack/react-query';
import type { ForkedFrom } from '#libs/sdk';
import { useConsole } from '../caller.js';
import { exact, shortId, when } from '../format.js';
import { link } from '../router.js';

/** The forks listed (the first page, newest first); more are read through the API. */
const FORKS_PAGE = 20;

/** A session's `yuxi.forked_from`, null on a session that is no fork. */
function forkedFrom(session: { yuxi: object }): ForkedFrom | null {
  return (session.yuxi as { forked_from?: ForkedFrom | null }).forked_from ?? null;
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
  const list = forks.data?.data ?? [];
  if (!from && list.length === 0) return null;
  return (
    <section aria-labelledby="lineage-title" className="lineage">
      <h2 id="lineage-title">Lineage</h2>
      {from && (
        <p>
          Forked from <SessionLink id={from.session_id}>{`session ${shortId(from.session_id)}`}</SessionLink>
          {` ${from.position} turn `}
          <code title={from.turn_id}>{shortId(from.turn_id)}</code>
          <span className="muted">{' · its history up to there is shared, not copied'}</span>
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
