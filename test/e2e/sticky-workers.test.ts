import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { env } from '../support/env.js';
import { createSession, sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';

// Sticky workers (README, Dispatch and recovery): inputs on a session its worker just drove wake
// that worker by pub/sub, with no BullMQ job, and none is lost. The jobs are counted by the
// session queue's job id counter, which every added job increments.
describe('sticky workers', () => {
  let redis: Redis;
  before(() => {
    redis = new Redis(env.redisUrl);
  });
  after(() => redis.disconnect());

  const jobsAdded = async () => Number((await redis.get('bull:session-dispatch:id')) ?? 0);

  it('drives follow-ups and an input sent during a turn on the lingering worker, with no BullMQ job, each claimed once', async () => {
    const session = await createSession('first');
    const stream = await SseStream.open(session.id);
    try {
      const first = await stream.waitForType('agent.session.turn.completed');
      assert.ok(await redis.get(`yuxi:linger:{${session.id}}`), 'the session lingers on the worker that drove it');
      const before = await jobsAdded();
      const seen = new Set<string>([first.data.turn_id]);
      const completed = async (count: number) => {
        while (seen.size < count) {
          const event = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && !seen.has(e.data.turn_id));
          seen.add(event.data.turn_id);
        }
      };
      for (const text of ['two', 'three']) {
        await sendMessage(session.id, text);
        await completed(seen.size + 1);
      }
      // The second input commits while the first runs: the wake-up reaches the pass that drives the
      // session, which looks at the queue again before it ends.
      await sendMessage(session.id, 'four [[delay:400]]');
      await stream.waitFor((e) => e.type === 'agent.session.turn.in_progress' && !seen.has(e.data.turn_id));
      await sendMessage(session.id, 'five');
      await completed(seen.size + 2);
      assert.equal(await jobsAdded(), before, 'no BullMQ job was added for these inputs');
      assert.equal(seen.size, 5);
    } finally {
      stream.close();
    }
  });
});
