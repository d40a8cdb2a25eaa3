import { useInfiniteQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { StorageTotal } from '#libs/sdk';
import { ErrorState, MorePages, TableWrap } from '../admin-ui.js';
import { useConsole } from '../caller.js';
import { count, exact, ownerText, shortId, when } from '../format.js';
import { size } from './Artifacts.js';
import '../admin.css';

const PAGE = 50;

type By = 'owner' | 'project';

/**
 * What each owner, or each owner's project, stores: the storage accounting's totals, largest first.
 * They lag what is stored by about one accounting interval, which the "Measured" column shows.
 */
export function StoragePage() {
  const { client } = useConsole();
  const [by, setBy] = useState<By>('owner');
  const [owner, setOwner] = useState<StorageTotal | null>(null);
  const totals = useInfiniteQuery({
    queryKey: ['storage', by, owner?.owner_id ?? null],
    queryFn: ({ pageParam }) => client.admin.storage({ by, limit: PAGE, ...(owner ? { owner_id: owner.owner_id } : {}), ...(pageParam ? { after: pageParam } : {}) }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = totals.data?.pages.flatMap((page) => page.data) ?? [];
  const quota = rows[0]?.quota_bytes ?? null;
  const showProjects = (total: StorageTotal) => {
    setOwner(total);
    setBy('project');
  };
  return (
    <section aria-labelledby="storage-title" className="admin-page">
      <div className="page-head">
        <h1 id="storage-title">Storage</h1>
        <button type="button" onClick={() => void totals.refetch()} disabled={totals.isFetching}>
          {totals.isFetching && !totals.isFetchingNextPage ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      <p className="muted lede">
        What each owner’s sessions store (rows, files and workspaces), largest first, as the worker last measured them: a session is measured again after its activity, so the figures lag by about one accounting interval.{' '}
        {quota !== null ? `Each owner may store ${size(quota)} (STORAGE_QUOTA_BYTES); past it, new inputs are refused.` : 'No storage quota is set.'}
      </p>
      <div className="toolbar">
        <div className="field">
          <label htmlFor="storage-by">Totals per</label>
          <select id="storage-by" value={by} onChange={(e) => setBy(e.target.value as By)}>
            <option value="owner">Owner</option>
            <option value="project">Project</option>
          </select>
        </div>
        {owner && (
          <p className="muted">
            Owner <strong title={owner.owner_id}>{ownerText(owner.owner)}</strong>{' '}
            <button type="button" onClick={() => setOwner(null)}>
              Every owner
            </button>
          </p>
        )}
      </div>
      {totals.isPending && <p aria-busy="true">Reading the storage totals…</p>}
      {totals.isError && <ErrorState what="the storage totals" error={totals.error} onRetry={() => void totals.refetch()} />}
      {totals.isSuccess && rows.length === 0 && <p className="empty">{by === 'owner' ? 'Nothing measured yet: totals appear once the worker has measured sessions.' : 'No session of a project measured yet.'}</p>}
      {rows.length > 0 && (
        <TableWrap label="Storage totals">
          <table className="admin-table storage-table">
            <caption className="visually-hidden">{by === 'owner' ? 'Stored bytes per owner, largest first' : 'Stored bytes per project, largest first'}</caption>
            <thead>
              <tr>
                <th scope="col">{by === 'owner' ? 'Owner' : 'Project'}</th>
                <th scope="col" className="num">
                  Stored
                </th>
                <th scope="col" className="num">
                  Sessions
                </th>
                <th scope="col" className="num">
                  Rows
                </th>
                <th scope="col">Measured</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((total) => (
                <tr key={total.id}>
                  <th scope="row">
                    {by === 'owner' ? (
                      <>
                        <span title={total.owner_id}>{ownerText(total.owner)}</span> <code className="muted small">{shortId(total.owner_id)}</code>
                        <div className="small">
                          <button type="button" className="link" onClick={() => showProjects(total)} aria-label={`Projects of ${ownerText(total.owner)}`}>
                            Projects
                          </button>
                        </div>
                      </>
                    ) : (
                      <>
                        <span title={total.project_id ?? undefined}>{total.project_name ?? <code>{shortId(total.project_id ?? '')}</code>}</span>
                        <div className="muted small" title={total.owner_id}>
                          {ownerText(total.owner)}
                        </div>
                      </>
                    )}
                  </th>
                  <td className="num">
                    <span title={`${count(total.bytes)} bytes`}>{size(total.bytes)}</span>
                    {by === 'owner' && quota !== null && (
                      <div className={`small ${total.bytes >= quota ? 'error' : 'muted'}`}>{total.bytes >= quota ? 'over quota' : `${Math.floor((total.bytes / quota) * 100)}% of quota`}</div>
                    )}
                  </td>
                  <td className="num">{count(total.sessions)}</td>
                  <td className="num">{count(total.rows)}</td>
                  <td title={`measured ${exact(total.measured_at)}; summed ${exact(total.summed_at)}`}>{total.measured_at === null ? 'not yet' : when(total.measured_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <MorePages shown={rows.length} hasMore={totals.hasNextPage} loading={totals.isFetchingNextPage} onMore={() => void totals.fetchNextPage()} noun={by === 'owner' ? ['owner', 'owners'] : ['project', 'projects']} />
    </section>
  );
}
