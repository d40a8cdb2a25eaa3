import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith } from '../support/agents.js';
import { API, http } from '../support/http.js';
import { OpenApiSchemas } from '../support/openapi-schema.js';
import { type SseEvent, SseStream } from '../support/sse.js';

// An event carries at most EVENT_ITEM_CONTENT_BYTES (64 KiB by default) of an item's content, in
// the outbox, live and on replay; past it the content is cut and `yuxi.truncated` says so, and the
// items route still returns the item whole.

const BOUND = 64 * 1024;
/** ~80 KB of ordinary text (ASCII: one byte per character), within the scripted model's window. */
const LONG = Array.from({ length: 2400 }, (_, i) => `Line ${i} of a very long message.`).join('\n');

describe('item content in events is bounded', () => {
  let schemas: OpenApiSchemas;
  const streams: SseStream[] = [];
  before(async () => {
    schemas = await OpenApiSchemas.live();
  });
  after(() => streams.forEach((s) => s.close()));

  async function turnEvents(sessionId: string): Promise<SseEvent[]> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    await stream.waitForType('agent.session.turn.completed', undefined, 30_000);
    stream.close();
    return stream.events;
  }

  const userItemEvents = (events: SseEvent[]) => events.filter((e) => e.type.startsWith('agent.session.turn.item.') && e.data.item.role === 'user');

  it('a long message\'s item events are cut to the bound and flagged; the items route returns it whole', async () => {
    assert.ok(LONG.length > BOUND + 10_000);
    const session = await createSessionWith('default-chatbot', `${LONG} [[words:3]]`);
    const events = await turnEvents(session.id);
    const userEvents = userItemEvents(events);
    assert.deepEqual(userEvents.map((e) => e.type), ['agent.session.turn.item.added', 'agent.session.turn.item.done']);
    for (const event of userEvents) {
      const text: string = event.data.item.content[0].text;
      assert.equal(Buffer.byteLength(text), BOUND, `${event.type} carries the bound`);
      assert.ok(LONG.startsWith(text), 'the start of the message');
      assert.equal(event.data.yuxi.truncated, true);
      assert.ok(event.data.yuxi.seq >= 1, 'durable: from the outbox');
      assert.ok(event.bytes < BOUND + 4096, `${event.type} is ${event.bytes} bytes on the wire`);
      assert.deepEqual(schemas.problems('SessionEvent', event.data), [], 'yuxi.truncated is in the event schema');
    }

    const items = await http(`${API}/sessions/${session.id}/items?order=asc`);
    assert.equal(items.status, 200, items.text);
    const user = items.body.data.find((i: any) => i.role === 'user');
    assert.equal(user.content[0].text, `${LONG} [[words:3]]`, 'the item is whole');

    // A stream opened later replays the stored events: the same cut ones.
    const replayed = userItemEvents(await turnEvents(session.id));
    assert.deepEqual(
      replayed.map((e) => e.data),
      userEvents.map((e) => e.data),
    );

    // A short message's events carry their content as it is, with no flag.
    const short = await createSessionWith('default-chatbot', 'hello there [[words:3]]');
    for (const event of userItemEvents(await turnEvents(short.id))) {
      assert.equal(event.data.item.content[0].text, 'hello there [[words:3]]');
      assert.equal('truncated' in event.data.yuxi, false);
    }
  });
});
