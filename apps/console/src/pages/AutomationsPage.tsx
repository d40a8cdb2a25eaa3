import { useInfiniteQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ErrorState, MorePages, TableWrap } from '../admin-ui.js';
import { link, usePath } from '../router.js';
import { AutomationActions, forgetNotice, leftNotice, NextRun, Schedule, Status } from './automation-actions.js';
import { AutomationDetail } from './AutomationDetail.js';
import { AutomationForm } from './AutomationForm.js';
import { automations } from './automations-api.js';
import '../admin.css';
import './automations.css';

/** `/automations`: the caller's automations and the create form; `/automations/{id}`: one, with its invocation history. */
export function AutomationsPage() {
  const path = usePath();
  const one = /^\/automations\/([^/]+)$/.exec(path);
  if (one) return <AutomationDetail automationId={decodeURIComponent(one[1]!)} />;
  return <AutomationList />;
}

function AutomationList() {
  const [creating, setCreating] = useState(false);
  const [notice, setNotice] = useState<{ said: string; ranId?: string }>(() => ({ said: leftNotice() }));
  useEffect(forgetNotice, []);
  const list = useInfiniteQuery({
    queryKey: ['automations'],
    queryFn: ({ pageParam, signal }) => automations.list(pageParam, signal),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = list.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section aria-labelledby="automations-title" className="admin-page automations">
      <div className="page-head">
        <h1 id="automations-title">Automations</h1>
        <button type="button" className="primary" aria-expanded={creating} aria-controls="new-automation" onClick={() => setCreating(!creating)}>
          New automation
        </button>
      </div>
      <p className="muted lede">Your agents on a clock: each scheduled time starts a new session of a saved agent, or sends a message to one of your sessions, exactly once.</p>
      {creating && (
        <AutomationForm
          onCancel={() => setCreating(false)}
          onCreated={(automation) => {
            setCreating(false);
            setNotice({ said: `Created “${automation.name}”.` });
            void list.refetch();
          }}
        />
      )}
      <p role="status" className="ok">
        {notice.said}
        {notice.ranId && (
          <>
            {' '}
            <a {...link(`/automations/${encodeURIComponent(notice.ranId)}`)}>See its invocations</a>
          </>
        )}
      </p>
      {list.isPending && <p aria-busy="true">Loading automations…</p>}
      {list.isError && <ErrorState what="the automations" error={list.error} onRetry={() => void list.refetch()} />}
      {list.isSuccess && rows.length === 0 && <p className="empty">No automations yet. Create one with “New automation”.</p>}
      {rows.length > 0 && (
        <TableWrap label="Your automations">
          <table className="admin-table automations-table">
            <caption className="visually-hidden">Your automations, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Schedule</th>
                <th scope="col">Status</th>
                <th scope="col">Next run</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((automation) => (
                <tr key={automation.id}>
                  <th scope="row" className="wrap">
                    <a {...link(`/automations/${encodeURIComponent(automation.id)}`)}>{automation.name}</a>
                    <div className="muted small">{automation.target.type === 'new_session' ? `new session of ${automation.target.agent_id}` : 'message to a session'}</div>
                  </th>
                  <td className="wrap">
                    <Schedule automation={automation} />
                  </td>
                  <td className="wrap">
                    <Status automation={automation} />
                  </td>
                  <td>
                    <NextRun automation={automation} />
                  </td>
                  <td>
                    <AutomationActions
                      automation={automation}
                      onDone={(said, invocation) => setNotice({ said, ranId: invocation?.automation_id })}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <MorePages shown={rows.length} hasMore={list.hasNextPage} loading={list.isFetchingNextPage} onMore={() => void list.fetchNextPage()} noun={['automation', 'automations']} />
    </section>
  );
}
