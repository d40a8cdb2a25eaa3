import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeanPolling } from '#libs/queue';

// The consumer's polling policy (libs/queue/src/lean-polling.ts): which asks for a job go to Redis.
describe('lean polling of a queue consumer', () => {
  it('asks Redis for every job while the asks find none', () => {
    const polling = new LeanPolling();
    for (let i = 0; i < 3; i += 1) {
      assert.equal(polling.shouldAsk(), true);
      polling.took(undefined);
    }
  });

  it('answers the ask right after a job was taken without Redis, once, and asks again after that', () => {
    const polling = new LeanPolling();
    assert.equal(polling.shouldAsk(), true);
    polling.took({ id: '1' });
    assert.equal(polling.shouldAsk(), false, 'the take re-armed the marker: the blocking wait finds a waiting job');
    assert.equal(polling.shouldAsk(), true);
  });

  it('always asks Redis after a blocking wait began, even right after a job was taken', () => {
    // The wait may have popped the marker of a job just added: skipping that ask would strand it.
    const polling = new LeanPolling();
    polling.took({ id: '1' });
    polling.waited();
    assert.equal(polling.shouldAsk(), true);
  });

  it('asks Redis for the job after each taken one in a burst (every other ask goes out)', () => {
    const polling = new LeanPolling();
    const asked: boolean[] = [];
    for (let i = 0; i < 4; i += 1) {
      const ask = polling.shouldAsk();
      asked.push(ask);
      if (ask) polling.took({ id: String(i) });
    }
    assert.deepEqual(asked, [true, false, true, false]);
  });

  it('never fetches the next job within the script that finishes one', () => {
    assert.equal(new LeanPolling().fetchNext(), false);
  });
});
