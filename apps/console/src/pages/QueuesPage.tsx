import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { AgentsApiError } from '#libs/sdk';
import { ErrorState, TableWrap } from '../admin-ui.js';
import { useConsole } from '../caller.js';
import { count, duration, exact, when } from '../format.js';
import '../admin.css';

const REFRESH_MS = 5000;

/** Queue depths, the oldest waiting input, live workers, runs held and taken over; refreshed every 5 s. */
export function QueuesPage() {
  const { client } = useConsole();
  const [live, setLive] = useState(true);
  const status = useQuery({
    queryKey: ['queues'],
    queryFn: () => client.admin.queues(),
    refetchInterval: live ? REFRESH_MS : false,
    refetchIntervalInBackground: false,
    // A 503 is shown as it is, and the next refresh tries again.
    retry: false,
  });
  const data = status.data;
  const unavailable = status.error instanceof AgentsApiError && status.error.status === 503;
  return (
    <section aria-labelledby="queues-title" className="admin-page">
      <div className="page-head">
        <h1 id="queues-title">Queues</h1>
        <div className="actions">
          <button type="button" aria-pressed={live} onClick={() => setLive(!live)}>
            {live ? 'Pause auto-refresh' : 'Resume auto-refresh'}
          </button>
          <button type="button" onClick={() => void status.refetch()} disabled={status.isFetching}>
            Refresh now
          </button>
        </div>
      </div>
      <p className="muted lede">
        {live ? 'Refreshed every 5 seconds.' : 'Auto-refresh is paused.'} {data && <span title={exact(data.read_at)}>Numbers as of {new Date(data.read_at * 1000).toLocaleTimeString()}.</span>}
      </p>
      {status.isPending && <p aria-busy="true">Reading the queues…</p>}
      {status.isError &&
        (unavailable ? (
          <div role="alert" className="error-state">
            <p>
              <strong>Queue status is unavailable right now.</strong> The api cannot reach Redis or Postgres (503). {live ? 'This page tries again every 5 seconds' : 'Resume auto-refresh or press Refresh now to try again'}; if it
              persists, check those services and the worker logs.
            </p>
            {data && <p>The numbers below are from {when(data.read_at)} and may be out of date.</p>}
          </div>
        ) : (
          <ErrorState what="the queue status" error={status.error} onRetry={() => void status.refetch()} />
        ))}
      {data && (
        <>
          <dl className="tiles">
            <div className={data.oldest_pending_input_age_s !== null && data.oldest_pending_input_age_s > 60 ? 'alerting' : undefined}>
              <dt>Oldest waiting input</dt>
              <dd>{data.oldest_pending_input_age_s === null ? 'none' : duration(data.oldest_pending_input_age_s * 1000)}</dd>
            </div>
            <div className={data.workers.length === 0 ? 'alerting' : undefined}>
              <dt>Live workers</dt>
              <dd>{count(data.workers.length)}</dd>
            </div>
            <div>
              <dt>Runs held</dt>
              <dd>{count(data.runs.held)}</dd>
            </div>
            <div className={data.runs.awaiting_takeover > 0 ? 'alerting' : undefined}>
              <dt>Awaiting takeover</dt>
              <dd>{count(data.runs.awaiting_takeover)}</dd>
            </div>
            <div>
              <dt>Takeovers, last hour</dt>
              <dd>{count(data.runs.takeovers_last_hour)}</dd>
            </div>
          </dl>
          {data.workers.length === 0 && (
            <p className="warning">No worker has a live heartbeat: inputs wait until a worker starts. Check that the worker process is running.</p>
          )}

          <section aria-labelledby="queue-table-title">
            <h2 id="queue-table-title">Queues</h2>
            <TableWrap label="Queue depths">
              <table className="admin-table">
                <caption className="visually-hidden">Jobs per queue</caption>
                <thead>
                  <tr>
                    <th scope="col">Queue</th>
                    <th scope="col">State</th>
                    <th scope="col" className="num">
                      Waiting
                    </th>
                    <th scope="col" className="num">
                      Active
                    </th>
                    <th scope="col" className="num">
                      Delayed
                    </th>
                    <th scope="col" className="num">
                      Failed
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.queues.map((queue) => (
                    <tr key={queue.name}>
                      <th scope="row">
                        <code>{queue.name}</code>
                      </th>
                      <td>
                        <span className={`badge badge-${queue.paused ? 'paused' : 'running'}`}>{queue.paused ? 'paused' : 'running'}</span>
                      </td>
                      <td className="num">{count(queue.waiting)}</td>
                      <td className="num">{count(queue.active)}</td>
                      <td className="num">{count(queue.delayed)}</td>
                      <td className="num">{count(queue.failed)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          </section>

          <section aria-labelledby="worker-table-title">
            <h2 id="worker-table-title">Workers</h2>
            {data.workers.length === 0 ? (
              <p className="empty">No live workers.</p>
            ) : (
              <TableWrap label="Live workers">
                <table className="admin-table">
                  <caption className="visually-hidden">Workers with a live heartbeat</caption>
                  <thead>
                    <tr>
                      <th scope="col">Worker</th>
                      <th scope="col">Host</th>
                      <th scope="col" className="num">
                        PID
                      </th>
                      <th scope="col">Consuming</th>
                      <th scope="col">Started</th>
                      <th scope="col">Last heartbeat</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.workers.map((worker) => (
                      <tr key={worker.id}>
                        <th scope="row">
                          <code>{worker.id}</code>
                        </th>
                        <td>{worker.host}</td>
                        <td className="num">{worker.pid}</td>
                        <td>{worker.consuming ? 'yes' : 'no'}</td>
                        <td title={exact(worker.started_at)}>{when(worker.started_at)}</td>
                        <td title={exact(worker.last_heartbeat_at)}>{when(worker.last_heartbeat_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            )}
          </section>
        </>
      )}
    </section>
  );
}
