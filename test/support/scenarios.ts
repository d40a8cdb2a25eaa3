import assert from 'node:assert/strict';
import { createSession, postEvent, sendMessage } from './http.js';
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

const TURN_ENDS = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);

/** Sends a follow-up message to a subscribed session, waits for its turn to end and asserts it completed; the turn's end event. */
export async function completedFollowUp(session: { id: string; stream: SseStream }, text: string): Promise<SseEvent> {
  const before = session.stream.events.length;
  const res = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text });
  assert.equal(res.status, 202, res.text);
  const end = await session.stream.waitFor((e) => TURN_ENDS.has(e.type) && session.stream.events.indexOf(e) >= before, 60_000);
  assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));
  return end;
}
