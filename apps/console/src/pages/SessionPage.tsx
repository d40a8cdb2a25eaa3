import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import type { AgentsClient, Item } from '#libs/sdk';
import { exact, when } from '../format.js';
import { WaitpointForm } from './WaitpointForm.js';

const RECENT_ITEMS = 50;

/**
 * One session: its recent items (the newest page: a long history is never loaded whole), the text
 * streaming now (the event stream, read through fetch since EventSource cannot send the key, resumed
 * from its last cursor by the SDK), the waitpoint to answer, and the controls.
 */
export function SessionPage({ client, sessionId }: { client: AgentsClient; sessionId: string }) {
  const queries = useQueryClient();
  const session = useQuery({ queryKey: ['session', sessionId], queryFn: () => client.sessions.get(sessionId) });
  const items = useQuery({
    queryKey: ['items', sessionId],
    queryFn: async () => (await client.sessions.items(sessionId, { order: 'desc', limit: RECENT_ITEMS })).data.reverse(),
  });
  const live = useLiveText(client, sessionId, () => {
    void queries.invalidateQueries({ queryKey: ['session', sessionId] });
    void queries.invalidateQueries({ queryKey: ['items', sessionId] });
  });

  if (session.isError) {
    return (
      <p role="alert" className="error">
        This session could not be loaded ({String(session.error)}): it may not exist or not be visible to this key.
      </p>
    );
  }
  if (!session.data) return <p aria-busy="true">Loading the session…</p>;
  const current = session.data.yuxi.current_turn;
  const active = session.data.status === 'in_progress' || session.data.status === 'requires_action';
  const shown = new Set((items.data ?? []).map((item) => item.id));
  return (
    <article aria-labelledby="session-title">
      <header className="session-head">
        <h1 id="session-title">{session.data.yuxi.title || 'Untitled session'}</h1>
        <p className="muted">
          <span className={`status status-${session.data.status}`}>{session.data.status.replace('_', ' ')}</span> · agent {session.data.agent.id} · created{' '}
          <time title={exact(session.data.created_at)}>{when(session.data.created_at)}</time>
        </p>
        {active && current && (
          <button type="button" className="danger" onClick={() => void client.sessions.cancel(sessionId, { turn_id: current.id })}>
            Cancel turn
          </button>
        )}
      </header>
      {current?.waitpoint && session.data.status === 'requires_action' && <WaitpointForm client={client} sessionId={sessionId} session={session.data} />}
      <section aria-label="Timeline" className="timeline">
        {items.isSuccess && items.data.length === 0 && Object.keys(live).length === 0 && <p className="empty">Nothing here yet: the session has no items.</p>}
        <ol>
          {(items.data ?? []).map((item) => (
            <li key={item.id} className={`item item-${item.type} role-${item.role ?? 'tool'}`}>
              <ItemView item={item} />
            </li>
          ))}
          {Object.entries(live)
            .filter(([id]) => !shown.has(id))
            .map(([id, text]) => (
              <li key={id} className="item item-message role-assistant streaming" aria-live="polite">
                <span className="who">assistant</span>
                <p>{text}</p>
              </li>
            ))}
        </ol>
      </section>
    </article>
  );
}

function ItemView({ item }: { item: Item }) {
  if (item.type === 'message') {
    const text = (item.content ?? []).map((part) => part.text ?? (part.type === 'input_image' ? '[image]' : '')).join('\n');
    return (
      <>
        <span className="who">{item.role}</span>
        {item.yuxi.reasoning?.map((block, index) => (
          <details key={index}>
            <summary>Reasoning</summary>
            <p>{block.text}</p>
          </details>
        ))}
        <p>{text}</p>
        {item.status === 'incomplete' && <span className="muted">(incomplete)</span>}
      </>
    );
  }
  if (item.type === 'function_call_output') {
    return (
      <>
        <span className="who">tool result {item.yuxi.success === false ? '(failed)' : ''}</span>
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
  return (
    <>
      <span className="who">tool call {item.name}</span>
      <pre>{item.arguments}</pre>
    </>
  );
}

/**
 * The text streaming into assistant messages, by item id, from the session's event stream; the
 * caller's `refresh` runs on every durable change (an item written, a turn state) so the page
 * re-reads what is persisted.
 */
function useLiveText(client: AgentsClient, sessionId: string, refresh: () => void): Record<string, string> {
  const [texts, setTexts] = useState<Record<string, string>>({});
  // The latest `refresh` (a new closure each render) without restarting the stream, which is kept
  // for the session, not per render.
  const latestRefresh = useRef(refresh);
  useEffect(() => {
    latestRefresh.current = refresh;
  }, [refresh]);
  useEffect(() => {
    const abort = new AbortController();
    void (async () => {
      try {
        for await (const event of client.sessions.events(sessionId, { signal: abort.signal })) {
          if (event.type === 'agent.session.turn.output_text.delta') {
            const { item_id, delta } = event;
            setTexts((current) => ({ ...current, [item_id]: (current[item_id] ?? '') + delta }));
          } else if (event.type !== 'yuxi.session.turn.reasoning.delta') {
            latestRefresh.current();
          }
        }
      } catch (error) {
        // Aborted on leaving the page, or the stream gave up: the persisted items stay shown.
        if (!abort.signal.aborted) console.warn('session events ended', error);
      }
    })();
    return () => abort.abort();
  }, [client, sessionId]);
  return texts;
}

