import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API, http, postEvent } from '../support/http.js';
import { busySession } from '../support/scenarios.js';

// An items page names the runs its items belong to (`yuxi.runs`), each with the inputs it consumed;
// a message item shows when the input it came from was received.

const SLOW = 'a b c d e f g h i j k l [[delay:80]]';

describe('run summaries and message receipts on items pages', () => {
  it('each run of the page carries its input_ids; user messages carry their input\'s received_at, on the page and in their events', async () => {
    const { session, stream, turn: created } = await busySession(SLOW);
    try {
      const turnId = created.data.turn_id as string;
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.turn_id === turnId);
      const steer = await postEvent(session.id, { type: 'agent.session.input.message', input: 'change of plan', yuxi: { mode: 'steer' } });
      assert.equal(steer.status, 202, steer.text);
      await stream.waitForType('agent.session.turn.completed', turnId);

      const turn = (await http(`${API}/sessions/${session.id}/turns/${turnId}`)).body;
      const [first, second] = turn.yuxi.runs;
      assert.equal(turn.yuxi.runs.length, 2, 'the run that yielded and the one that took the steer');
      assert.equal(first.input_ids.length, 1);
      assert.deepEqual(second.input_ids, [steer.body.input_id]);

      for (const path of [`${API}/sessions/${session.id}/items?order=asc&limit=100`, `${API}/sessions/${session.id}/turns/${turnId}/items?order=asc&limit=100`]) {
        const page = (await http(path)).body;
        const summaries = new Map<string, any>(page.yuxi.runs.map((run: any) => [run.id, run]));
        assert.deepEqual([...summaries.keys()].sort(), [first.id, second.id].sort(), path);
        assert.deepEqual(summaries.get(first.id).input_ids, first.input_ids, 'the summary lists the same inputs as the run');
        assert.deepEqual(summaries.get(second.id).input_ids, [steer.body.input_id]);

        const users = page.data.filter((item: any) => item.role === 'user');
        assert.equal(users.length, 2);
        for (const item of users) {
          assert.ok(summaries.get(item.yuxi.run_id).input_ids.includes(item.yuxi.input_id), 'the message\'s run consumed its input');
          const input = (await http(`${API}/sessions/${session.id}/inputs/${item.yuxi.input_id}`)).body;
          assert.equal(typeof input.received_at, 'number');
          assert.equal(item.yuxi.received_at, input.received_at, 'the message shows its input\'s receipt time');
          assert.equal(input.items.find((own: any) => own.id === item.id).yuxi.received_at, input.received_at, 'and so does the input\'s own view of it');
        }
        for (const item of page.data.filter((item: any) => item.role === 'assistant')) assert.equal(item.yuxi.received_at, null, 'an assistant message has no input');
      }

      const steerInput = (await http(`${API}/sessions/${session.id}/inputs/${steer.body.input_id}`)).body;
      const added = stream.events.filter((e) => e.type === 'agent.session.turn.item.added' && e.data.item.role === 'user');
      assert.equal(added.length, 2);
      const steerAdded = added.find((e) => e.data.item.yuxi.input_id === steer.body.input_id);
      assert.ok(steerAdded, 'the steer\'s message was announced');
      assert.equal(steerAdded.data.item.yuxi.received_at, steerInput.received_at, 'the event shows the same receipt time as the items page');
      for (const event of added) assert.equal(typeof event.data.item.yuxi.received_at, 'number');
    } finally {
      stream.close();
    }
  });
});
