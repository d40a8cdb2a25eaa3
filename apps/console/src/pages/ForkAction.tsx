import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useState } from 'react';
import { useConsole } from '../caller.js';
import { navigate } from '../router.js';

/**
 * The session whose timeline offers "Fork from here", and its current turn (`yuxi.current_turn`:
 * while under way, never forked after: the API answers 409 until it has finished), or null: a fork
 * is its owner's own session, so another owner's page (read through the admin routes) offers none.
 */
export const ForkSource = createContext<{ sessionId: string; current: { id: string; status: string } | null } | null>(null);

const FINISHED = new Set(['completed', 'failed', 'cancelled']);

/**
 * "Fork from here" on a finished turn: a new session that shares this one's history up to the end
 * of the turn (README "Fork"), then its page. `status`: the turn's, when the view knows it (the
 * turns view); the messages view knows the current turn's only (every earlier turn has finished).
 */
export function ForkAction({ turnId, status, label }: { turnId: string | null | undefined; status?: string; label?: string }) {
  const source = useContext(ForkSource);
  const { client } = useConsole();
  const queries = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!source || !turnId) return null;
  const finished = FINISHED.has(status ?? (turnId === source.current?.id ? source.current.status : 'completed'));
  if (!finished) return null;
  const fork = () => {
    setBusy(true);
    setError(null);
    // One key per click: a retry inside the SDK (a lost answer) reuses it and gets the same fork back.
    client.sessions.fork(source.sessionId, { after_turn_id: turnId }, { idempotencyKey: `console-fork-${crypto.randomUUID()}` }).then(
      (created) => {
        void queries.invalidateQueries({ queryKey: ['forks', source.sessionId] });
        navigate(`/sessions/${created.id}`);
      },
      (caught: unknown) => {
        setError(`The fork was not made: ${caught instanceof Error ? caught.message : String(caught)}.`);
        setBusy(false);
      },
    );
  };
  return (
    <div className="fork-action">
      <button type="button" disabled={busy} onClick={fork} title={`A new session with this history up to the end of ${label ?? 'this turn'}`}>
        {busy ? 'Forking…' : 'Fork from here'}
      </button>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </div>
  );
}
