import { useEffect, useRef, useState } from 'react';
import type { AgentsClient } from '#libs/sdk';

/** Text streaming into an assistant message that is not persisted yet. */
export interface LiveText {
  turnId: string;
  text: string;
}

/**
 * The text streaming into assistant messages, by item id, from the session's event stream (the
 * SDK's iterator: read through fetch since EventSource cannot send the key, resumed from its last
 * cursor). Only the session's owner may open the stream: `enabled` is false otherwise. `refresh`
 * runs (at most every 250 ms) after durable changes, so the page re-reads what is persisted; a
 * message once done leaves the live texts (the persisted copy shows instead).
 */
export function useLiveText(client: AgentsClient, sessionId: string, enabled: boolean, refresh: () => void): Record<string, LiveText> {
  const [texts, setTexts] = useState<Record<string, LiveText>>({});
  // The latest `refresh` (a new closure each render) without restarting the stream.
  const latestRefresh = useRef(refresh);
  useEffect(() => {
    latestRefresh.current = refresh;
  }, [refresh]);
  useEffect(() => {
    if (!enabled) return;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const scheduleRefresh = () => {
      timer ??= setTimeout(() => {
        timer = null;
        latestRefresh.current();
      }, 250);
    };
    void (async () => {
      try {
        for await (const event of client.sessions.events(sessionId, { signal: abort.signal })) {
          if (event.type === 'agent.session.turn.output_text.delta') {
            const { item_id, turn_id, delta } = event;
            setTexts((current) => ({ ...current, [item_id]: { turnId: turn_id, text: (current[item_id]?.text ?? '') + delta } }));
          } else if (event.type === 'yuxi.session.turn.reasoning.delta') {
            continue;
          } else {
            if (event.type === 'agent.session.turn.item.done') {
              const done = event.item.id;
              setTexts((current) => {
                if (!(done in current)) return current;
                const rest = { ...current };
                delete rest[done];
                return rest;
              });
            }
            scheduleRefresh();
          }
        }
      } catch (error) {
        // Aborted on leaving the page, or the stream gave up: the persisted state stays shown.
        if (!abort.signal.aborted) console.warn('session events ended', error);
      }
    })();
    return () => {
      abort.abort();
      if (timer) clearTimeout(timer);
      // Another session (or none) next: its texts start empty.
      setTexts({});
    };
  }, [client, sessionId, enabled]);
  return texts;
}
