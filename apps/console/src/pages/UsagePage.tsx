import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import type { UsageReport, UsageReportRow } from '#libs/sdk';
import { ErrorState, TableWrap } from '../admin-ui.js';
import { may, useConsole } from '../caller.js';
import { count, shortId } from '../format.js';
import { navigate } from '../router.js';
import { SpendOverTime, TopBars } from './usage-charts.js';
import '../admin.css';

const DAY_MS = 86_400_000;
const TOP = 10;

type Whose = 'own' | 'all';
interface Range {
  from: string;
  to: string;
  whose: Whose;
}

const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10);

/** The last 30 UTC days, today included. */
function defaultRange(): Range {
  return { from: isoDay(Date.now() - 29 * DAY_MS), to: isoDay(Date.now()), whose: 'own' };
}

/** Micro-dollars as dollars: cents when large, down to a hundredth of a cent when small; "no price" when unknown. */
export function usd(micro: number | null): string {
  if (micro === null) return 'no price';
  const dollars = micro / 1e6;
  const digits = dollars >= 100 ? 2 : dollars >= 1 ? 3 : 4;
  return new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: digits }).format(dollars);
}

const tokensOf = (row: UsageReportRow) => row.input_tokens + row.output_tokens;

/** Every day of the range, with the report's numbers where it has a row (a day without usage is a zero, not a gap). */
function series(report: UsageReport, range: Range): { days: string[]; rows: Map<string, UsageReportRow> } {
  const rows = new Map(report.data.map((row) => [row.key ?? '', row]));
  const days: string[] = [];
  for (let at = Date.parse(`${range.from}T00:00:00Z`); at <= Date.parse(`${range.to}T00:00:00Z`) && days.length < 400; at += DAY_MS) days.push(isoDay(at));
  return { days, rows };
}

function totals(rows: UsageReportRow[]) {
  const priced = rows.filter((row) => row.cost_microusd !== null);
  return {
    cost: priced.length === 0 ? null : priced.reduce((sum, row) => sum + row.cost_microusd!, 0),
    tokens: rows.reduce((sum, row) => sum + tokensOf(row), 0),
    modelCalls: rows.reduce((sum, row) => sum + row.model_calls, 0),
    toolCalls: rows.reduce((sum, row) => sum + row.tool_calls, 0),
  };
}

/** Spend over time and the top sessions and agents, for the caller's own usage or (operators) every owner's. */
export function UsagePage() {
  const { client, caller } = useConsole();
  const mayReadAll = may.actOnEverySession(caller);
  const [draft, setDraft] = useState<Range>(defaultRange);
  const [range, setRange] = useState<Range>(draft);
  const [formError, setFormError] = useState('');
  const load = (groupBy: 'day' | 'session' | 'agent', limit?: number) => {
    const params = { group_by: groupBy, from: range.from, to: range.to, ...(limit ? { limit } : {}) };
    return range.whose === 'all' ? client.admin.usage(params) : client.usage(params);
  };
  const byDay = useQuery({ queryKey: ['usage', range, 'day'], queryFn: () => load('day') });
  const bySession = useQuery({ queryKey: ['usage', range, 'session'], queryFn: () => load('session', TOP) });
  const byAgent = useQuery({ queryKey: ['usage', range, 'agent'], queryFn: () => load('agent', TOP) });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!draft.from || !draft.to) return setFormError('Enter both dates.');
    if (draft.from > draft.to) return setFormError('The start date must not be after the end date.');
    if (Date.parse(draft.to) - Date.parse(draft.from) >= 366 * DAY_MS) return setFormError('Choose at most 366 days.');
    setFormError('');
    setRange(draft);
  };
  const scope = range.whose === 'all' ? 'every owner' : 'you';
  const failed = byDay.error ?? bySession.error ?? byAgent.error;
  return (
    <section aria-labelledby="usage-title" className="admin-page usage-page">
      <h1 id="usage-title">Usage</h1>
      <p className="muted lede">
        Tokens, model and tool calls, and their cost at the deployment’s prices (the price in force at each call), per UTC day from {range.from} to {range.to} inclusive, for {scope}.
      </p>
      <form className="toolbar" onSubmit={submit} aria-label="Usage range" noValidate>
        <div className="field">
          <label htmlFor="usage-from">From</label>
          <input id="usage-from" type="date" value={draft.from} max={draft.to} aria-invalid={formError ? true : undefined} onChange={(e) => setDraft({ ...draft, from: e.target.value })} />
        </div>
        <div className="field">
          <label htmlFor="usage-to">To</label>
          <input id="usage-to" type="date" value={draft.to} min={draft.from} aria-invalid={formError ? true : undefined} onChange={(e) => setDraft({ ...draft, to: e.target.value })} />
        </div>
        {mayReadAll && (
          <div className="field">
            <label htmlFor="usage-whose">Whose usage</label>
            <select id="usage-whose" value={draft.whose} onChange={(e) => setDraft({ ...draft, whose: e.target.value as Whose })}>
              <option value="own">Mine</option>
              <option value="all">Every owner</option>
            </select>
          </div>
        )}
        <button type="submit" className="primary">
          Show
        </button>
      </form>
      {formError && (
        <p role="alert" className="error">
          {formError}
        </p>
      )}
      {failed && <ErrorState what="the usage report" error={failed} onRetry={() => void Promise.all([byDay.refetch(), bySession.refetch(), byAgent.refetch()])} />}
      {byDay.isPending && <p aria-busy="true">Reading the usage…</p>}
      {byDay.data && <Overview report={byDay.data} range={range} />}
      <div className="usage-tops">
        {bySession.data && <Top title="Top sessions by cost" what="Session" report={bySession.data} linkSessions={range.whose === 'own'} />}
        {byAgent.data && <Top title="Top agents by cost" what="Agent" report={byAgent.data} />}
      </div>
    </section>
  );
}

function Overview({ report, range }: { report: UsageReport; range: Range }) {
  const { days, rows } = series(report, range);
  const sum = totals(report.data);
  const cost = days.map((day) => (rows.get(day)?.cost_microusd ?? 0) / 1e6);
  const tokens = days.map((day) => (rows.get(day) ? tokensOf(rows.get(day)!) : 0));
  return (
    <>
      <dl className="tiles">
        <div>
          <dt>Cost</dt>
          <dd>{usd(sum.cost)}</dd>
        </div>
        <div>
          <dt>Tokens</dt>
          <dd>{count(sum.tokens)}</dd>
        </div>
        <div>
          <dt>Model calls</dt>
          <dd>{count(sum.modelCalls)}</dd>
        </div>
        <div>
          <dt>Tool calls</dt>
          <dd>{count(sum.toolCalls)}</dd>
        </div>
      </dl>
      <section aria-labelledby="usage-days-title">
        <h2 id="usage-days-title">Spend over time</h2>
        {report.data.length === 0 ? (
          <p className="empty">No usage in this range.</p>
        ) : (
          <>
            <SpendOverTime days={days} cost={cost} tokens={tokens} label={`Cost and tokens per day from ${range.from} to ${range.to}; the numbers are in the table below.`} />
            <details>
              <summary>Show the numbers per day</summary>
              <TableWrap label="Usage per day">
                <table className="admin-table">
                  <caption className="visually-hidden">Usage per day (days with usage)</caption>
                  <thead>
                    <tr>
                      <th scope="col">Day (UTC)</th>
                      <th scope="col" className="num">Cost</th>
                      <th scope="col" className="num">Input tokens</th>
                      <th scope="col" className="num">Output tokens</th>
                      <th scope="col" className="num">Model calls</th>
                      <th scope="col" className="num">Tool calls</th>
                    </tr>
                  </thead>
                  <tbody>
                    {report.data.map((row) => (
                      <tr key={row.key}>
                        <th scope="row">{row.key}</th>
                        <td className="num">{usd(row.cost_microusd)}</td>
                        <td className="num">{count(row.input_tokens)}</td>
                        <td className="num">{count(row.output_tokens)}</td>
                        <td className="num">{count(row.model_calls)}</td>
                        <td className="num">{count(row.tool_calls)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            </details>
          </>
        )}
      </section>
    </>
  );
}

function Top({ title, what, report, linkSessions }: { title: string; what: 'Session' | 'Agent'; report: UsageReport; linkSessions?: boolean }) {
  const id = `usage-top-${what.toLowerCase()}`;
  const name = (row: UsageReportRow) => (row.key === null ? 'none' : what === 'Session' ? shortId(row.key) : row.key);
  const priced = report.data.some((row) => row.cost_microusd !== null);
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {report.data.length === 0 ? (
        <p className="empty">No usage in this range.</p>
      ) : (
        <>
          {priced ? (
            <TopBars labels={report.data.map(name)} values={report.data.map((row) => (row.cost_microusd ?? 0) / 1e6)} series="Cost (USD)" label={`${title}; the numbers are in the table below.`} />
          ) : (
            <>
              <p className="muted small">No model here has a price yet: the bars show tokens.</p>
              <TopBars labels={report.data.map(name)} values={report.data.map(tokensOf)} series="Tokens" label={`${title} (by tokens: no prices); the numbers are in the table below.`} />
            </>
          )}
          <TableWrap label={title}>
            <table className="admin-table">
              <caption className="visually-hidden">{title}</caption>
              <thead>
                <tr>
                  <th scope="col">{what}</th>
                  <th scope="col" className="num">Cost</th>
                  <th scope="col" className="num">Tokens</th>
                  <th scope="col" className="num">Model calls</th>
                  <th scope="col" className="num">Tool calls</th>
                </tr>
              </thead>
              <tbody>
                {report.data.map((row) => (
                  <tr key={row.key ?? ''}>
                    <th scope="row">
                      {linkSessions && row.key ? (
                        <a
                          href={`/console/sessions/${encodeURIComponent(row.key)}`}
                          title={row.key}
                          aria-label={`Session ${name(row)}`}
                          onClick={(event) => {
                            event.preventDefault();
                            navigate(`/sessions/${encodeURIComponent(row.key!)}`);
                          }}
                        >
                          <code>{name(row)}</code>
                        </a>
                      ) : (
                        <code title={row.key ?? undefined}>{name(row)}</code>
                      )}
                    </th>
                    <td className="num">{usd(row.cost_microusd)}</td>
                    <td className="num">{count(tokensOf(row))}</td>
                    <td className="num">{count(row.model_calls)}</td>
                    <td className="num">{count(row.tool_calls)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {report.has_more && <p className="muted small">The top {report.data.length} of more.</p>}
        </>
      )}
    </section>
  );
}
