import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSession } from '../support/http.js';
import { RawSseClient, TURN_ENDS, turnsUntilCut } from '../support/slow-reader.js';
import { SseStream } from '../support/sse.js';

/** The events up to and including the first that matches. */
function upTo<T>(events: T[], last: (e: T) => boolean): T[] {
  const at = events.findIndex(last);
  assert.notEqual(at, -1);
  return events.slice(0, at + 1);
}

describe('SSE backpressure', () => {
  it('cuts a client that stops reading with a retry: hint, and a resume from its last id loses no event', { timeout: 180_000 }, async () => {
    const session = await createSession();
    const witness = await SseStream.open(session.id);
    const slow = new RawSseClient(session.id);
    try {
      await slow.until('agent.session.created');
      assert.match(slow.status, /^HTTP\/1\.1 200 /);
      slow.stopReading();
      // Large turns until the api cuts the client that stopped reading (test/support/slow-reader.ts).
      const turns = await turnsUntilCut(session.id, witness);
      const lastTurnId = turns.at(-1);

      // The slow client reads again: what was buffered for it, the retry: hint, then the end.
      await slow.readToEnd();
      assert.equal(slow.retry, 1000, 'the cut stream ends with a retry: hint');
      const last = slow.events.at(-1);
      assert.ok(last, 'the slow client got events before it was cut');
      assert.ok(slow.events.length < witness.events.length, 'the slow client was cut before the end of the turns');

      // It resumes from the last id it received, as EventSource would with Last-Event-ID.
      const resumed = await SseStream.open(session.id, { lastEventId: last.id });
      try {
        await resumed.waitFor((e) => TURN_ENDS.has(e.type) && e.data.turn_id === lastTurnId, 60_000);
        assert.ok(!resumed.events.some((e) => e.type === 'yuxi.session.resync'), 'no resync: nothing was lost');
        // Compared up to the last turn's completion: what follows it may still be on its way to either.
        const isEnd = (type: string, turnId: unknown): boolean => TURN_ENDS.has(type) && turnId === lastTurnId;
        const resumedIds = upTo(resumed.events, (e) => isEnd(e.type, e.data.turn_id)).map((e) => e.data.event_id as string);
        const witnessIds = upTo(witness.events, (e) => isEnd(e.type, e.data.turn_id)).map((e) => e.data.event_id as string);
        assert.deepEqual([...slow.events.map((e) => e.eventId), ...resumedIds], witnessIds, 'the cut stream and its resumption together are exactly the uninterrupted stream');
      } finally {
        resumed.close();
      }
    } finally {
      slow.destroy();
      witness.close();
    }
  });
});
