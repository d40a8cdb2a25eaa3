import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmDialog, problem } from '../admin-ui.js';
import { exact, shortId, statusText } from '../format.js';
import { link } from '../router.js';
import { type Automation, automations, type Invocation, inZone } from './automations-api.js';

// What the list and an automation's page share: its schedule, status and next run in words, and its
// actions (pause or resume, run now, delete after a confirmation).


const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** A time ahead as people read it: "in 5 minutes", "in 3 hours", "in 2 days". */
export function fromNow(unixSeconds: number): string {
  const ahead = unixSeconds - Date.now() / 1000;
  if (Math.abs(ahead) < 60) return relative.format(Math.round(ahead), 'second');
  if (Math.abs(ahead) < 3600) return relative.format(Math.round(ahead / 60), 'minute');
  if (Math.abs(ahead) < 86400) return relative.format(Math.round(ahead / 3600), 'hour');
  return relative.format(Math.round(ahead / 86400), 'day');
}

export function Schedule({ automation }: { automation: Automation }) {
  if (automation.type === 'once') return <span>once, {automation.run_at ? exact(automation.run_at) : '—'}</span>;
  return (
    <span>
      <code>{automation.expression}</code> <span className="muted">{automation.timezone}</span>
    </span>
  );
}

export function Status({ automation }: { automation: Automation }) {
  return (
    <>
      <span className={`badge badge-${automation.status}`}>{automation.status}</span>
      {automation.pause_reason && <div className="muted small">by the service: {statusText(automation.pause_reason)}</div>}
    </>
  );
}

export function NextRun({ automation }: { automation: Automation }) {
  const at = automation.yuxi.next_run_at;
  if (!at) return <span className="muted">—</span>;
  return (
    <time dateTime={new Date(at * 1000).toISOString()} title={automation.timezone ? inZone(at, automation.timezone) : exact(at)}>
      {fromNow(at)}
    </time>
  );
}

/** The link to the session an invocation started or sent to (the console's session page). */
export function SessionLink({ sessionId }: { sessionId: string }) {
  return (
    <a {...link(`/sessions/${encodeURIComponent(sessionId)}`)} title={sessionId}>
      Session <code>{shortId(sessionId)}</code>
    </a>
  );
}

type Action = 'pause' | 'resume' | 'run';

let notice = '';
/** A notice for the next page to say (an automation deleted from its own page, said by the list). */
export function leaveNotice(said: string): void {
  notice = said;
}
/** The notice left for this page (read while rendering: pure). */
export function leftNotice(): string {
  return notice;
}
/** Said once: the next visit starts without it. */
export function forgetNotice(): void {
  notice = '';
}

/**
 * An automation's buttons: pause or resume, run now, delete (confirmed first). What happened is said
 * in `onDone` (the page's status line); a failure too.
 */
export function AutomationActions({ automation, onDone, onDeleted }: { automation: Automation; onDone: (said: string, invocation?: Invocation) => void; onDeleted?: (said: string) => void }) {
  const queries = useQueryClient();
  const [busy, setBusy] = useState<Action | null>(null);
  const [deleting, setDeleting] = useState(false);
  const [deleteBusy, setDeleteBusy] = useState(false);
  const [deleteError, setDeleteError] = useState<string | null>(null);
  const refresh = () =>
    Promise.all([
      queries.invalidateQueries({ queryKey: ['automations'] }),
      queries.invalidateQueries({ queryKey: ['automation', automation.id] }),
      queries.invalidateQueries({ queryKey: ['automation-invocations', automation.id] }),
    ]);
  const act = async (action: Action) => {
    setBusy(action);
    try {
      if (action === 'run') {
        const invocation = await automations.runNow(automation.id, `console-run-${crypto.randomUUID()}`);
        onDone(`Ran “${automation.name}” now: ${statusText(invocation.status)}${invocation.error ? ` (${invocation.error.message})` : ''}.`, invocation);
      } else {
        await (action === 'pause' ? automations.pause(automation.id) : automations.resume(automation.id));
        onDone(action === 'pause' ? `Paused “${automation.name}”: it fires no more until resumed.` : `Resumed “${automation.name}”.`);
      }
    } catch (error) {
      onDone(`Could not ${action === 'run' ? 'run' : action} “${automation.name}”. ${problem(error)}`);
    } finally {
      setBusy(null);
      await refresh();
    }
  };
  const remove = async () => {
    setDeleteBusy(true);
    setDeleteError(null);
    try {
      await automations.remove(automation.id);
      setDeleting(false);
      const said = `Deleted “${automation.name}” and its history.`;
      queries.removeQueries({ queryKey: ['automation', automation.id] });
      await queries.invalidateQueries({ queryKey: ['automations'] });
      if (onDeleted) onDeleted(said);
      else onDone(said);
    } catch (error) {
      setDeleteError(`Not deleted. ${problem(error)}`);
    } finally {
      setDeleteBusy(false);
    }
  };
  const paused = automation.status === 'paused';
  const hidden = <span className="visually-hidden"> {automation.name}</span>;
  return (
    <div className="actions row-actions">
      {automation.status !== 'completed' && (
        <button type="button" onClick={() => void act(paused ? 'resume' : 'pause')} disabled={busy !== null}>
          {paused ? 'Resume' : 'Pause'}
          {hidden}
        </button>
      )}
      <button type="button" onClick={() => void act('run')} disabled={busy !== null}>
        {busy === 'run' ? 'Running…' : 'Run now'}
        {hidden}
      </button>
      <button
        type="button"
        className="danger"
        onClick={() => {
          setDeleteError(null);
          setDeleting(true);
        }}
      >
        Delete{hidden}
      </button>
      <ConfirmDialog
        open={deleting}
        title={`Delete “${automation.name}”?`}
        confirmLabel="Delete automation"
        busy={deleteBusy}
        error={deleteError}
        onConfirm={() => void remove()}
        onCancel={() => setDeleting(false)}
      >
        <p>It fires no more, and its invocation history goes with it. The sessions it started stay.</p>
      </ConfirmDialog>
    </div>
  );
}
