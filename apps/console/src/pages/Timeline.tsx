import { useQuery } from '@tanstack/react-query';
import { createContext, useContext, useState } from 'react';
import type { Item, TimelineRun, TimelineStep, TimelineTurn } from '#libs/sdk';
import { useConsole } from '../caller.js';
import { article, count, duration, exact, runStatusText, statusText, tokens, when } from '../format.js';
import { CommandBlock, LiveCommand, ShellStep, shellCommandOf } from './CommandBlock.js';
import { asCommand } from './environment.js';
import { ForkAction } from './ForkAction.js';
import type { LiveText } from './live.js';
import { TracePanel } from './TracePanel.js';
import { turnTraceId } from './trace-layout.js';

/** A page-loading button ("Load older …") and what it says while it loads. */
export interface Older {
  hasMore: boolean;
  loading: boolean;
  load: () => void;
}

function OlderButton({ older, what }: { older: Older; what: string }) {
  if (!older.hasMore) return null;
  return (
    <button type="button" className="older" onClick={older.load} disabled={older.loading}>
      {older.loading ? `Loading older ${what}…` : `Load older ${what}`}
    </button>
  );
}

function Time({ at }: { at: number | null | undefined }) {
  if (!at) return <>—</>;
  return (
    <time dateTime={new Date(at * 1000).toISOString()} title={exact(at)}>
      {when(at)}
    </time>
  );
}

/** Live text of messages (and output of commands) not persisted yet, announced politely as it grows. */
function Streaming({ texts }: { texts: [string, LiveText][] }) {
  if (texts.length === 0) return null;
  return (
    <div className="streaming" aria-live="polite">
      {texts.map(([id, live]) =>
        live.kind === 'command' ? (
          <div key={id} className="item item-command_execution">
            <span className="who">command, running now</span>
            <LiveCommand itemId={id} text={live.text} command={live.command} />
          </div>
        ) : (
          <div key={id} className="item role-assistant">
            <span className="who">assistant, writing now</span>
            <p>{live.text}</p>
          </div>
        ),
      )}
    </div>
  );
}

/**
 * The session whose runs' exact model requests this viewer may read, or null: they are recorded
 * only with MODEL_REQUEST_AUDIT=on (`model_requests: recorded`), and read only by an administrator
 * signed in with a user token (the full audit of a run is for an administrator's user token only).
 */
export const ModelRequestsOf = createContext<string | null>(null);

/** A run's recorded model requests, fetched when opened (each is a whole prompt). */
function ModelRequests({ sessionId, run }: { sessionId: string; run: TimelineRun }) {
  const { client } = useConsole();
  const [open, setOpen] = useState(false);
  const requests = useQuery({
    queryKey: ['model-requests', sessionId, run.id],
    enabled: open,
    queryFn: ({ signal }) => client.admin.sessions.modelRequests(sessionId, run.id, { limit: 100 }, { signal }),
  });
  if (!open) {
    return (
      <button type="button" className="older" onClick={() => setOpen(true)}>
        {`Model requests of run ${run.seq}`}
      </button>
    );
  }
  if (requests.isError) return <p className="error">{`Could not read the model requests: ${String(requests.error)}`}</p>;
  if (!requests.data) return <p aria-busy="true">Reading the model requests…</p>;
  if (requests.data.data.length === 0) return <p className="muted">No model request of this run was recorded.</p>;
  return (
    <section aria-label={`Model requests of run ${run.seq}`} className="model-requests">
      {requests.data.data.map((record) => (
        <details key={record.step_id}>
          <summary>{`Model request ${record.seq} · ${record.model}`}</summary>
          {/* Scrolls when long: focusable, so the keyboard can scroll it too. */}
          <pre tabIndex={0} aria-label={`The request of model call ${record.seq}`}>
            {JSON.stringify(record.request, null, 2)}
          </pre>
        </details>
      ))}
      {requests.data.has_more && <p className="muted">More requests than shown: read them through the API.</p>}
    </section>
  );
}

/**
 * The session's turns (a page of them, oldest first on screen), each with its runs and their
 * steps: model calls, tool calls, resolved waitpoints, compactions; takeovers and errors said in words.
 */
export function TurnsView({ turns, older, live }: { turns: TimelineTurn[]; older: Older; live: Record<string, LiveText> }) {
  const shownTurns = new Set(turns.map((turn) => turn.id));
  const elsewhere = Object.entries(live).filter(([, text]) => !shownTurns.has(text.turnId));
  return (
    <>
      <OlderButton older={older} what="turns" />
      {turns.length === 0 && elsewhere.length === 0 && <p className="empty">No turns yet: the session has not been sent a message.</p>}
      <ol className="turns">
        {turns.map((turn) => (
          <li key={turn.id} id={`turn-${turn.id}`} className={`turn turn-${turn.status}`}>
            <TurnView turn={turn} live={Object.entries(live).filter(([, text]) => text.turnId === turn.id)} />
          </li>
        ))}
      </ol>
      <Streaming texts={elsewhere} />
    </>
  );
}

function TurnView({ turn, live }: { turn: TimelineTurn; live: [string, LiveText][] }) {
  // Turn times are whole seconds: a turn within one second says so rather than "0 ms".
  const took = turn.started_at && turn.completed_at ? (turn.completed_at - turn.started_at < 1 ? 'under a second' : duration((turn.completed_at - turn.started_at) * 1000)) : null;
  return (
    <>
      <h3 className="turn-head">{`Turn ${turn.seq} · ${statusText(turn.status)}${turn.cancellation_pending ? ' (cancelling)' : ''}`}</h3>
      <p className="meta">
        {turn.model} · {tokens(turn.usage)} · created <Time at={turn.created_at} />
        {took && ` · took ${took}`}
      </p>
      {turn.error && <p className="error">{`Failed: ${turn.error.code}: ${turn.error.message}`}</p>}
      {turn.waitpoint && <p className="note">{`Waiting at ${article(turn.waitpoint.kind)} ${statusText(turn.waitpoint.kind)} waitpoint`}</p>}
      <ol className="runs">
        {turn.runs.map((run) => (
          <li key={run.id} className="run">
            <RunView run={run} turn={turn} />
          </li>
        ))}
      </ol>
      {turn.status === 'in_progress' || turn.status === 'queued' ? <Streaming texts={live} /> : null}
      <ForkAction turnId={turn.id} status={turn.status} label={`turn ${turn.seq}`} />
      {turn.status !== 'queued' && <TracePanel turnId={turn.id} traceId={turnTraceId(turn)} label={`turn ${turn.seq}`} />}
    </>
  );
}

/** Why a run continues another: a takeover, a waitpoint's answer, or a steer. */
function continues(run: TimelineRun, runs: TimelineRun[]): string | null {
  if (!run.resume_from_run_id) return null;
  const previous = runs.find((other) => other.id === run.resume_from_run_id);
  const which = previous ? `run ${previous.seq}` : 'an earlier run';
  if (previous?.interrupted || previous?.status === 'interrupted') return `Took over from ${which}, which was interrupted (its worker stopped or lost the lease).`;
  if (previous?.status === 'requires_action') return `Continues ${which} after its waitpoint was resolved.`;
  if (previous?.status === 'yielded') return `Continues ${which}, which made way for a steer.`;
  return `Continues ${which}.`;
}

function RunView({ run, turn }: { run: TimelineRun; turn: TimelineTurn }) {
  const from = continues(run, turn.runs);
  const requestsOf = useContext(ModelRequestsOf);
  return (
    <>
      <h4 className="run-head">{`Run ${run.seq} · ${runStatusText(run, turn)}${run.duration_ms !== null ? ` · ${duration(run.duration_ms)}` : ''}`}</h4>
      <p className="meta">
        {run.model} · {tokens(run.usage)}
        {run.lease && ` · held by ${run.lease.owner} (epoch ${run.lease.epoch})`}
        {run.input_ids.length > 0 && ` · ${count(run.input_ids.length)} input${run.input_ids.length === 1 ? '' : 's'}`}
      </p>
      {from && <p className="note">{from}</p>}
      {run.interrupted && <p className="note">Interrupted: a later run took over this one&apos;s work.</p>}
      {run.error && <p className="error">{`Failed: ${run.error.code}: ${run.error.message}`}</p>}
      {run.steps.length > 0 && (
        <ol className="steps">
          {run.steps.map((step) => (
            <li key={step.id} className={`step step-${step.kind}`}>
              <StepView step={step} />
            </li>
          ))}
        </ol>
      )}
      {requestsOf && run.steps.some((step) => step.kind === 'model_call') && <ModelRequests sessionId={requestsOf} run={run} />}
    </>
  );
}

/** Arguments as the model wrote them, indented when they are JSON. */
function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

const DECISIONS: Record<string, string> = { approve: 'approved', reject: 'rejected', approve_session: 'approved for the session' };

function StepView({ step }: { step: TimelineStep }) {
  const cut = step.truncated ? <p className="muted">(Cut to its first 4,000 characters.)</p> : null;
  if (step.kind === 'model_call' && step.model_call) {
    const call = step.model_call;
    return (
      <>
        <p className="step-head">
          <strong>Model call</strong> · {call.model ?? 'model not recorded'} · {duration(step.duration_ms)} · {tokens(call.usage)} · finish reason{' '}
          {call.finish_reason ?? (call.tool_call_count > 0 ? `tool calls (${count(call.tool_call_count)})` : 'not recorded')}
        </p>
        {call.text && <p className="text">{call.text}</p>}
        {cut}
      </>
    );
  }
  if (step.kind === 'tool_call' && step.tool_call) {
    const call = step.tool_call;
    const outcome = call.success === null ? (step.status === 'started' ? 'running' : 'no result') : call.success ? 'succeeded' : 'failed';
    // A command in the session's workspace reads as a terminal.
    const shell = call.name === 'shell' ? shellCommandOf(call.arguments) : null;
    return (
      <>
        <p className="step-head">
          <strong>Tool call</strong> · <code>{call.name}</code> · {outcome} · {duration(step.duration_ms)}
          {call.approval && ` · ${DECISIONS[call.approval] ?? call.approval}`}
        </p>
        {shell !== null ? (
          <ShellStep command={shell} output={call.output} />
        ) : (
          <>
            <p className="label">Arguments</p>
            <pre>{pretty(call.arguments)}</pre>
            {call.output !== null && (
              <>
                <p className="label">Result</p>
                <pre>{pretty(call.output)}</pre>
              </>
            )}
          </>
        )}
        {cut}
      </>
    );
  }
  if (step.kind === 'waitpoint' && step.waitpoint) {
    const { kind, response } = step.waitpoint;
    return (
      <>
        <p className="step-head">
          <strong>Waitpoint resolved</strong> · {kind ? statusText(kind) : 'unknown kind'} · <Time at={step.completed_at ?? step.created_at} />
        </p>
        {response?.answers && (
          <ul className="plain">
            {response.answers.map((answer) => (
              <li key={answer.question_id}>Answered: {Array.isArray(answer.answer) ? answer.answer.join(', ') : answer.answer}</li>
            ))}
          </ul>
        )}
        {response?.decisions && (
          <ul className="plain">
            {response.decisions.map((decision) => (
              <li key={decision.call_id}>
                {`Call ${decision.call_id}: ${DECISIONS[decision.decision] ?? decision.decision}`}
                {decision.message && ` (${decision.message})`}
              </li>
            ))}
          </ul>
        )}
        {response?.type === 'tool_results' && <p className="muted">The client sent its tool results.</p>}
        {response?.type === 'cooperation' && <p className="muted">The members it waited for settled.</p>}
      </>
    );
  }
  if (step.kind === 'compaction' && step.compaction) {
    const compaction = step.compaction;
    return (
      <p className="step-head">
        <strong>Context compacted</strong> · {compaction.trigger ?? 'trigger not recorded'} · {count(compaction.tokens_before)} → {count(compaction.tokens_after)} tokens
        {compaction.model && ` · by ${compaction.model}`}
        {!compaction.item_id && ' · there was nothing to compact'}
      </p>
    );
  }
  return <p className="step-head">{`${statusText(step.kind)} · ${step.status}`}</p>;
}

/** The session's items (a page of the newest, oldest first on screen): messages, tool calls and their outputs, compactions. */
export function ItemsView({ items, older, live }: { items: Item[]; older: Older; live: Record<string, LiveText> }) {
  const shown = new Set(items.map((item) => item.id));
  const streaming = Object.entries(live).filter(([id]) => !shown.has(id));
  // A command's block shows its output: the function_call_output the model read of it would say it twice.
  const commandCalls = new Set(items.flatMap((item) => (asCommand(item) ? [(item as { call_id?: string }).call_id] : [])));
  const listed = items.filter((item) => !(item.type === 'function_call_output' && commandCalls.has(item.call_id)));
  return (
    <>
      <OlderButton older={older} what="messages" />
      {items.length === 0 && streaming.length === 0 && <p className="empty">Nothing here yet: the session has no items.</p>}
      <ol className="items">
        {listed.map((item, index) => (
          // The first item of each turn is where a link to the turn (an artifact's) lands.
          <li key={item.id} id={listed[index - 1]?.yuxi.turn_id !== item.yuxi.turn_id ? `turn-${item.yuxi.turn_id}` : undefined} className={`item item-${item.type} role-${item.role ?? 'tool'}`}>
            <ItemView item={item} live={live[item.id]?.text} />
            {listed[index + 1]?.yuxi.turn_id !== item.yuxi.turn_id && (
              <>
                <ForkAction turnId={item.yuxi.turn_id} />
                <TracePanel turnId={item.yuxi.turn_id} label="this turn" />
              </>
            )}
          </li>
        ))}
      </ol>
      <Streaming texts={streaming} />
    </>
  );
}

function ItemView({ item, live }: { item: Item; live: string | undefined }) {
  const command = asCommand(item);
  if (command) {
    return (
      <>
        <span className="who">
          command · <Time at={item.yuxi.created_at} />
        </span>
        <CommandBlock command={command} live={live} />
      </>
    );
  }
  if (item.type === 'message') {
    const text = (item.content ?? []).map((part) => part.text ?? (part.type === 'input_image' ? '[image]' : '')).join('\n');
    return (
      <>
        <span className="who">
          {item.role} · <Time at={item.yuxi.created_at} />
        </span>
        {item.yuxi.reasoning?.map((block, index) => (
          <details key={index}>
            <summary>Reasoning</summary>
            <p>{block.text}</p>
          </details>
        ))}
        <p>{text}</p>
        {item.status === 'incomplete' && <span className="muted">(incomplete: the run stopped while it was written)</span>}
      </>
    );
  }
  if (item.type === 'function_call_output') {
    return (
      <>
        <span className="who">tool result{item.yuxi.success === false ? ' (failed)' : ''}</span>
        <pre>{item.output}</pre>
      </>
    );
  }
  if (item.type === 'compaction') {
    return (
      <>
        <span className="who">context compacted</span>
        <p>{item.summary}</p>
      </>
    );
  }
  if (item.type === 'create_subagent_call') {
    return (
      <>
        <span className="who">created a member{item.agent_id ? ` (${item.agent_id})` : ''}</span>
        <p>{item.task}</p>
      </>
    );
  }
  if (item.type === 'message_subagent_call') {
    return (
      <>
        <span className="who">message to member {item.subagent_id}</span>
        <p>{item.message}</p>
      </>
    );
  }
  if (item.type === 'wait_subagents_call' || item.type === 'interrupt_subagent_call') {
    return <span className="who">{item.type === 'wait_subagents_call' ? `waits for ${item.mode ?? 'all'} members` : `interrupts member ${item.subagent_id}`}</span>;
  }
  return (
    <>
      <span className="who">tool call · {item.name}</span>
      <pre>{pretty(item.arguments ?? '')}</pre>
    </>
  );
}
