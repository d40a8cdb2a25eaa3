import { createSession, sendMessage } from './http.js';
import { type SseEvent, SseStream } from './sse.js';

/**
 * A session with a subscription and a turn already running `text` (slow it down with
 * [[delay:MS]] to hold the turn open). Returns the turn's `agent.session.turn.created` event.
 */
export async function busySession(text: string): Promise<{ session: any; stream: SseStream; turn: SseEvent }> {
  const session = await createSession();
  const stream = await SseStream.open(session.id);
  await sendMessage(session.id, text);
  const turn = await stream.waitForType('agent.session.turn.created');
  return { session, stream, turn };
}
