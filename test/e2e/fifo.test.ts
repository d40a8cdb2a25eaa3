import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { query } from '../support/db.js';
import { API, createSession, http, sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';

describe('follow-up queue', () => {
  it('runs three quick follow-ups as three turns in order, none lost, none duplicated', async () => {
    const session = await createSession('warm up [[delay:30]]');
    const stream = await SseStream.open(session.id);
    try {
      const texts = ['one', 'two', 'three'];
      const receipts = [];
      for (const text of texts) receipts.push((await sendMessage(session.id, text)).body);
      assert.equal(new Set(receipts.map((r: any) => r.input_id)).size, 3);

      const done = new Set<string>();
      while (done.size < 4) {
        const event = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && !done.has(e.data.turn_id));
        done.add(event.data.turn_id);
      }
      const turns = await http(`${API}/sessions/${session.id}/turns?order=asc&limit=100`);
      assert.equal(turns.body.data.length, 4);
      assert.ok(turns.body.data.every((t: any) => t.status === 'completed'));

      const consumed = await query<{ id: string; received_seq: string; turn_id: string; status: string }>(
        `SELECT i.id, i.received_seq, i.turn_id, i.status FROM inputs i JOIN turns t ON t.id = i.turn_id
         WHERE i.session_id = $1 ORDER BY t.seq`,
        [session.id],
      );
      assert.equal(consumed.length, 4);
      assert.ok(consumed.every((row) => row.status === 'consumed'));
      assert.deepEqual(
        consumed.map((row) => Number(row.received_seq)),
        [1, 2, 3, 4],
        'turn order follows the received order',
      );
      assert.equal(new Set(consumed.map((row) => row.turn_id)).size, 4, 'each input is its own turn');

      const items = await http(`${API}/sessions/${session.id}/items?order=asc&limit=100`);
      const userTexts = items.body.data.filter((i: any) => i.role === 'user').map((i: any) => i.content[0].text);
      const answers = items.body.data.filter((i: any) => i.role === 'assistant').map((i: any) => i.content[0].text);
      assert.deepEqual(userTexts, ['warm up [[delay:30]]', ...texts]);
      assert.deepEqual(answers, ['Echo: warm up', ...texts.map((t) => `Echo: ${t}`)]);
    } finally {
      stream.close();
    }
  });
});
