import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { ErrorState, MorePages, TableWrap } from '../admin-ui.js';
import { exact, statusText, when } from '../format.js';
import { link, navigate } from '../router.js';
import { AutomationActions, leaveNotice, NextRun, Schedule, SessionLink, Status } from './automation-actions.js';
import { type Automation, automations, type Invocation, inZone, targetText } from './automations-api.js';

/** One automation: what it does, its actions, and its invocation history (newest first) with links to the sessions. */
export function AutomationDetail({ automationId }: { automationId: string }) {
  const [notice, setNotice] = useState('');
  const automation = useQuery({ queryKey: ['automation', automationId], queryFn: ({ signal }) => automations.get(automationId, signal) });
  const a = automation.data;
  return (
    <section aria-labelledby="automation-title" className="admin-page automations">
      <p className="crumbs">
        <a {...link('/automations')}>← Automations</a>
      </p>
      <h1 id="automation-title">{a ? a.name : 'Automation'}</h1>
      {automation.isPending && <p aria-busy="true">Loading the automation…</p>}
      {automation.isError && <ErrorState what="this automation" error={automation.error} onRetry={() => void automation.refetch()} />}
      {a && (
        <>
          <Facts automation={a} />
          <AutomationActions
            automation={a}
            onDone={setNotice}
            onDeleted={(said) => {
              // The list says it (its status line), where focus and the reader go next.
              leaveNotice(said);
              navigate('/automations');
            }}
          />
        </>
      )}
      <p role="status" className="ok">
        {notice}
      </p>
      {a && <Invocations automation={a} />}
    </section>
  );
}

function Facts({ automation: a }: { automation: Automation }) {
  return (
    <dl className="facts">
      <div>
        <dt>Schedule</dt>
        <dd>
          <Schedule automation={a} />
        </dd>
      </div>
      <div>
        <dt>Status</dt>
        <dd>
          <Status automation={a} />
        </dd>
      </div>
      <div>
        <dt>Next run</dt>
        <dd>
          <NextRun automation={a} />
          {a.yuxi.next_run_at && <div className="muted small">{a.timezone ? inZone(a.yuxi.next_run_at, a.timezone) : exact(a.yuxi.next_run_at)}</div>}
        </dd>
      </div>
      <div>
        <dt>If the previous run is still going</dt>
        <dd>{statusText(a.yuxi.overlap)}</dd>
      </div>
      <div>
        <dt>Missed times</dt>
        <dd>{a.yuxi.catch_up === 'none' ? 'fire none' : a.yuxi.catch_up === 'latest' ? 'fire the latest' : 'fire all'}</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd title={exact(a.created_at)}>{when(a.created_at)}</dd>
      </div>
      <div className="wide">
        <dt>{a.target.type === 'new_session' ? `Starts a new session of ${a.target.agent_id} with` : 'Sends to its session'}</dt>
        <dd>
          {a.target.type === 'existing_session' && (
            <>
              <SessionLink sessionId={a.target.session_id} />:{' '}
            </>
          )}
          <q>{targetText(a.target)}</q>
        </dd>
      </div>
    </dl>
  );
}

const REASONS: Record<string, string> = {
  scheduled: 'fired on time',
  manual: 'run now',
  catch_up: 'fired late, catching up',
  overlap_queued: 'queued behind the previous run’s turn',
  overlap_cancelled_previous: 'cancelled the previous run’s turn, then fired',
  overlap_skipped: 'skipped: the previous run’s turn was still active',
  missed: 'missed while nothing could fire it',
  target_unavailable: 'its target is gone (the automation was paused)',
  rejected: 'its input was refused',
};

/** Why an invocation did what it did, in words (the code beside it, as the API and webhooks spell it). */
function Reason({ invocation }: { invocation: Invocation }) {
  const code = invocation.yuxi.reason;
  return (
    <>
      {REASONS[code] ?? statusText(code)} <code className="muted small">{code}</code>
    </>
  );
}

function Invocations({ automation }: { automation: Automation }) {
  const invocations = useInfiniteQuery({
    queryKey: ['automation-invocations', automation.id],
    queryFn: ({ pageParam, signal }) => automations.invocations(automation.id, pageParam, signal),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
    // A periodic automation keeps firing while the page is open.
    refetchInterval: automation.status === 'active' ? 5_000 : false,
  });
  const rows = invocations.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section aria-labelledby="invocations-title">
      <h2 id="invocations-title">Invocations</h2>
      {invocations.isPending && <p aria-busy="true">Loading invocations…</p>}
      {invocations.isError && <ErrorState what="the invocations" error={invocations.error} onRetry={() => void invocations.refetch()} />}
      {invocations.isSuccess && rows.length === 0 && <p className="empty">No invocations yet: the first shows here when a scheduled time comes, or after “Run now”.</p>}
      {rows.length > 0 && (
        <TableWrap label="Invocation history">
          <table className="admin-table">
            <caption className="visually-hidden">Invocations, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Source</th>
                <th scope="col">Status</th>
                <th scope="col">Why</th>
                <th scope="col">Session</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((invocation) => (
                <tr key={invocation.id}>
                  <th scope="row">
                    {invocation.scheduled_at ? (
                      <time dateTime={new Date(invocation.scheduled_at * 1000).toISOString()} title={exact(invocation.scheduled_at)}>
                        {automation.timezone ? inZone(invocation.scheduled_at, automation.timezone) : exact(invocation.scheduled_at)}
                      </time>
                    ) : (
                      <time dateTime={new Date(invocation.created_at * 1000).toISOString()} title={exact(invocation.created_at)}>
                        {when(invocation.created_at)}
                      </time>
                    )}
                  </th>
                  <td>{invocation.source.type === 'manual' ? 'run now' : 'the schedule'}</td>
                  <td>
                    <span className={`badge badge-invocation-${invocation.status}`}>{invocation.status}</span>
                  </td>
                  <td className="wrap">
                    <Reason invocation={invocation} />
                    {invocation.error && (
                      <div className="error small">
                        <code>{invocation.error.code}</code>: {invocation.error.message}
                      </div>
                    )}
                  </td>
                  <td>{invocation.session_id ? <SessionLink sessionId={invocation.session_id} /> : <span className="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <MorePages shown={rows.length} hasMore={invocations.hasNextPage} loading={invocations.isFetchingNextPage} onMore={() => void invocations.fetchNextPage()} noun={['invocation', 'invocations']} />
    </section>
  );
}
