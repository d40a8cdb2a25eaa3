import { useEffect, useRef, useState } from 'react';
import type { AgentsClient } from '#libs/sdk';
import { asCommand, type CommandExecutionItem, commandDelta } from './environment.js';

/**
 * Text streaming into an item that is not persisted yet: an assistant message, or the output of
 * a running command (`command`: the item the stream announced, when it did).
 */
export interface LiveText {
  turnId: string;
  text: string;
  kind?: 'message' | 'command';
  command?: CommandExecutionItem;
}

/**
 * The text streaming into assistant messages and running commands' output, by item id, from the session's event stream (the
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
          // A running command's output (an event type the generated SDK types learn once regenerated).
          const output = commandDelta(event);
          if (event.type === 'agent.session.turn.output_text.delta') {
            const { item_id, turn_id, delta } = event;
            setTexts((current) => ({ ...current, [item_id]: { turnId: turn_id, text: (current[item_id]?.text ?? '') + delta } }));
          } else if (event.type === 'yuxi.session.turn.reasoning.delta') {
            continue;
          } else if (output) {
            const { itemId, turnId, delta } = output;
            setTexts((current) => ({ ...current, [itemId]: { ...current[itemId], kind: 'command', turnId, text: (current[itemId]?.text ?? '') + delta } }));
          } else {
            const added = event.type === 'agent.session.turn.item.added' ? { turnId: event.turn_id, command: asCommand(event.item) } : null;
            if (added?.command?.status === 'in_progress') {
              const { turnId, command } = added;
              setTexts((current) => ({ ...current, [command.id]: { turnId, text: current[command.id]?.text ?? '', kind: 'command', command } }));
            }
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
