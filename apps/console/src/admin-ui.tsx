import { type ReactNode, useEffect, useId, useRef } from 'react';
import { AgentsApiError, AgentsConnectionError, type FieldError } from '#libs/sdk';
import { useConsole } from './caller.js';
import { count, shortId } from './format.js';
import './admin.css';

// Pieces the administration pages share: what an error means to a person, a confirmation dialog,
// a table that scrolls on a phone, who did something.

/** What went wrong, said so that the reader knows what to do next. */
export function problem(error: unknown): string {
  if (error instanceof AgentsApiError) {
    const said = error.message.replace(/^\d+ \w+: /, '');
    switch (error.status) {
      case 401:
        return 'The API no longer accepts this key (401): it may have been revoked or have expired. Sign out and sign in with a valid key.';
      case 403:
        return `This key may not do this (403 ${error.code}): ${said} Sign in with a full-access key of a user who holds the needed role.`;
      case 404:
        return `Not found (404): ${said} It may have been deleted meanwhile; go back to the list.`;
      case 429:
        return 'Too many requests (429): wait a moment, then try again.';
      case 503:
        return `The service is unavailable (503 ${error.code}): Postgres or Redis cannot be reached. ${said} Try again in a moment.`;
      default:
        return `${error.status} ${error.code}: ${said}${error.requestId ? ` (request ${error.requestId})` : ''}`;
    }
  }
  if (error instanceof AgentsConnectionError) return `Could not reach the API (${error.message}). Check that it is running, then try again.`;
  return String(error);
}

/** The per-field problems of a 422 (`details.fields`), or null for any other error. */
export function fieldErrors(error: unknown): FieldError[] | null {
  if (!(error instanceof AgentsApiError) || error.status !== 422) return null;
  const fields = error.details.fields;
  return Array.isArray(fields) && fields.length > 0 ? fields : null;
}

/** A load that failed: what, why (and any hint the page adds), and a way to try again. */
export function ErrorState({ what, error, onRetry, children }: { what: string; error: unknown; onRetry?: () => void; children?: ReactNode }) {
  return (
    <div role="alert" className="error-state">
      <p>
        <strong>Could not load {what}.</strong> {problem(error)}
      </p>
      {children && <p>{children}</p>}
      {onRetry && (
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** A wide table: on a narrow screen it scrolls sideways in a region the keyboard can reach. */
export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

/** Who acted: you, the deployment (null), or a user id (shortened; the whole id in its title). */
export function Actor({ id }: { id: string | null }) {
  const { caller } = useConsole();
  if (id === null) return <span className="muted">the deployment</span>;
  if (id === caller.actor_id) return <span title={id}>you</span>;
  return (
    <code className="id" title={id}>
      {shortId(id)}
    </code>
  );
}

export interface ConfirmProps {
  open: boolean;
  title: string;
  confirmLabel: string;
  busy?: boolean;
  error?: string | null;
  onConfirm: () => void;
  onCancel: () => void;
  children?: ReactNode;
}

/**
 * A modal confirmation (the native dialog: focus moves in and stays, Escape cancels); focus goes
 * back where it was when it closes. Cancel is focused first: the safe choice.
 */
export function ConfirmDialog({ open, title, confirmLabel, busy, error, onConfirm, onCancel, children }: ConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement;
      dialog.showModal();
    } else if (!open && dialog.open) {
      dialog.close();
      if (opener.current instanceof HTMLElement && opener.current.isConnected) opener.current.focus();
    }
  }, [open]);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        if (!busy) onCancel();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="button" className="danger" onClick={onConfirm} disabled={busy}>
          {busy ? 'Working…' : confirmLabel}
        </button>
        <button type="button" onClick={onCancel} disabled={busy} autoFocus>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

/** "Load more" for a cursor list, saying how many are shown. */
export function MorePages({ shown, hasMore, loading, onMore, noun }: { shown: number; hasMore: boolean; loading: boolean; onMore: () => void; noun: [one: string, many: string] }) {
  if (shown === 0) return null;
  return (
    <div className="pager">
      <span className="muted">
        {count(shown)} {shown === 1 ? noun[0] : noun[1]} shown{hasMore ? '' : ' (all)'}
      </span>
      {hasMore && (
        <button type="button" onClick={onMore} disabled={loading}>
          {loading ? 'Loading…' : 'Load more'}
        </button>
      )}
    </div>
  );
}
