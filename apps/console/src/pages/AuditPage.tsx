import { useInfiniteQuery } from '@tanstack/react-query';
import type { MouseEvent } from 'react';
import type { AuditEntry } from '#libs/sdk';
import { Actor, ErrorState, MorePages, TableWrap } from '../admin-ui.js';
import { useConsole } from '../caller.js';
import { exact, shortId, when } from '../format.js';
import { navigate } from '../router.js';
import '../admin.css';

const PAGE = 50;

const ACTIONS: Record<AuditEntry['action'], string> = {
  'api_key.created': 'API key created',
  'api_key.revoked': 'API key revoked',
  'agent.created': 'Agent created',
  'agent.replaced': 'Agent replaced',
  'agent.deleted': 'Agent deleted',
  'user.role_changed': 'Role changed',
  'user.suspended': 'User suspended',
  'user.reactivated': 'User reactivated',
  'session.operator_event': 'Operator event',
  'session.cancel_requested': 'Cancel requested',
  'session.model_requests_read': 'Model requests read',
  'secret.created': 'Secret created',
  'secret.replaced': 'Secret rotated',
  'secret.deleted': 'Secret deleted',
  'webhook_endpoint.secret_rotated': 'Webhook secret rotated',
  'webhook_endpoint.disabled': 'Webhook endpoint disabled',
  'webhook_endpoint.recovered': 'Webhook endpoint recovered',
  'model_price.set': 'Model price set',
  'model_price.deleted': 'Model price deleted',
};

/** The audit trail, newest first, a cursor page at a time. */
export function AuditPage() {
  const { client } = useConsole();
  const audit = useInfiniteQuery({
    queryKey: ['audit'],
    queryFn: ({ pageParam }) => client.admin.audit({ limit: PAGE, ...(pageParam ? { after: pageParam } : {}) }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = audit.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section aria-labelledby="audit-title" className="admin-page">
      <div className="page-head">
        <h1 id="audit-title">Audit</h1>
        <button type="button" onClick={() => void audit.refetch()} disabled={audit.isFetching}>
          {audit.isFetching && !audit.isFetchingNextPage ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      <p className="muted lede">Administrative actions, newest first: keys created and revoked, agents saved and deleted, secrets written and deleted, roles changed, what operators did to others’ sessions. Details never hold a secret.</p>
      {audit.isPending && <p aria-busy="true">Loading the audit trail…</p>}
      {audit.isError && <ErrorState what="the audit trail" error={audit.error} onRetry={() => void audit.refetch()} />}
      {audit.isSuccess && rows.length === 0 && <p className="empty">Nothing audited yet: entries appear when someone creates a key, saves an agent or changes a role.</p>}
      {rows.length > 0 && (
        <TableWrap label="Audit trail">
          <table className="admin-table">
            <caption className="visually-hidden">Audit entries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Action</th>
                <th scope="col">Actor</th>
                <th scope="col">Target</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((entry) => (
                <tr key={entry.id}>
                  <td title={exact(entry.created_at)}>{when(entry.created_at)}</td>
                  <td>
                    {ACTIONS[entry.action] ?? entry.action}
                    <div className="muted small">
                      <code>{entry.action}</code>
                    </div>
                  </td>
                  <td>
                    <Actor id={entry.actor_id} />
                    <div className="muted small">{entry.key_id ? <span title={entry.key_id}>key {shortId(entry.key_id)}</span> : entry.actor_id ? 'user token' : ''}</div>
                  </td>
                  <td>
                    <Target entry={entry} />
                  </td>
                  <td className="wrap">
                    <Details details={entry.details} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <MorePages shown={rows.length} hasMore={audit.hasNextPage} loading={audit.isFetchingNextPage} onMore={() => void audit.fetchNextPage()} noun={['entry', 'entries']} />
    </section>
  );
}

function Target({ entry }: { entry: AuditEntry }) {
  const { type, id } = entry.target;
  const to = type === 'agent' ? `/agents/${encodeURIComponent(id)}` : type === 'session' ? `/sessions/${encodeURIComponent(id)}` : null;
  const label = type.replace('_', ' ');
  if (!to) {
    return (
      <>
        {label}{' '}
        <code title={id}>{shortId(id)}</code>
      </>
    );
  }
  return (
    <>
      {label}{' '}
      <a
        href={`/console${to}`}
        title={id}
        onClick={(event: MouseEvent) => {
          if (event.metaKey || event.ctrlKey || event.shiftKey) return;
          event.preventDefault();
          navigate(to);
        }}
      >
        {type === 'agent' ? id : shortId(id)}
      </a>
    </>
  );
}

function Details({ details }: { details: Record<string, unknown> }) {
  const entries = Object.entries(details);
  if (entries.length === 0) return <span className="muted">—</span>;
  return (
    <dl className="details">
      {entries.map(([key, value]) => (
        <div key={key} className="contents">
          <dt>{key.replaceAll('_', ' ')}</dt>
          <dd>{value === null ? 'none' : typeof value === 'string' ? value : JSON.stringify(value)}</dd>
        </div>
      ))}
    </dl>
  );
}
