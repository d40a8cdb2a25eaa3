import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { RedisClient } from '#libs/config';
import { CALL_MESSAGE_INLINE_BYTES, RunSignals } from '#libs/queue';

/** One Redis server's pub/sub and keys, as our clients use them: messages delivered asynchronously, in order. */
class FakeRedis {
  readonly keys = new Map<string, { value: string; ttlMs: number }>();
  /** Every PUBLISH, as channel and payload size. */
  readonly published: { channel: string; bytes: number }[] = [];
  private readonly subscribers = new Set<FakeSubscriber>();

  publisher(): RedisClient {
    return {
      publish: async (channel: string, text: string) => {
        this.published.push({ channel, bytes: Buffer.byteLength(text) });
        const to = [...this.subscribers].filter((s) => s.channels.has(channel));
        setImmediate(() => to.forEach((s) => s.emit('message', channel, text)));
        return to.length;
      },
      set: async (key: string, value: string, px: string, ttlMs: number) => {
        assert.equal(px, 'PX');
        this.keys.set(key, { value, ttlMs });
        return 'OK';
      },
      get: async (key: string) => this.keys.get(key)?.value ?? null,
      del: async (key: string) => Number(this.keys.delete(key)),
    } as unknown as RedisClient;
  }

  subscriber(): FakeSubscriber {
    const subscriber = new FakeSubscriber();
    this.subscribers.add(subscriber);
    return subscriber;
  }
}

class FakeSubscriber extends EventEmitter {
  readonly channels = new Set<string>();
  async subscribe(...channels: string[]): Promise<number> {
    channels.forEach((c) => this.channels.add(c));
    return this.channels.size;
  }
  async unsubscribe(...channels: string[]): Promise<number> {
    channels.forEach((c) => this.channels.delete(c));
    return this.channels.size;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

describe('messages about a held call between workers', () => {
  const workers = () => {
    const redis = new FakeRedis();
    const subs = [redis.subscriber(), redis.subscriber()];
    const [a, b] = subs.map((sub) => new RunSignals(redis.publisher(), sub as unknown as RedisClient));
    return { redis, subs, a: a!, b: b! };
  };

  it('reach only the worker listening at the address, on a channel of its own', async () => {
    const { subs, a, b } = workers();
    const got: unknown[] = [];
    await b.onCallMessage('call:t:1', (m) => got.push(m));
    await a.onCallMessage('reply:r1', () => assert.fail('not for this worker'));
    let aReceived = 0;
    subs[0]!.on('message', (channel: string) => (aReceived += channel.startsWith('yuxi:held-call:') ? 1 : 0));
    assert.equal(await a.sendCallMessage('call:t:1', { kind: 'answer' }), true);
    await settle();
    assert.deepEqual(got, [{ kind: 'answer' }]);
    assert.equal(aReceived, 0, 'the other worker never saw (nor parsed) it');
    assert.ok(subs[1]!.channels.has('yuxi:held-call:call:t:1'));
    assert.ok(!subs[1]!.channels.has('yuxi:held-call:reply:r1'));
  });

  it('a large message travels as a reference to a key with a TTL, read back in order with the messages around it', async () => {
    const { redis, a, b } = workers();
    const got: unknown[] = [];
    await b.onCallMessage('reply:r2', (m) => got.push(m));
    const big = { kind: 'outcome', outcome: { success: true, output: 'x'.repeat(4 * CALL_MESSAGE_INLINE_BYTES) } };
    await a.sendCallMessage('reply:r2', { kind: 'progress' });
    await a.sendCallMessage('reply:r2', big);
    await a.sendCallMessage('reply:r2', { kind: 'after' });
    const stored = [...redis.keys.values()];
    assert.equal(stored.length, 1);
    assert.ok(stored[0]!.ttlMs > 0 && stored[0]!.ttlMs <= 60_000);
    await settle();
    assert.deepEqual(got, [{ kind: 'progress' }, big, { kind: 'after' }]);
    assert.ok(Math.max(...redis.published.map((p) => p.bytes)) < 1024, 'no large payload went through pub/sub');
    assert.equal(redis.keys.size, 0, 'the stored message is removed once read');
  });

  it('unsubscribing drops the handler and the channel', async () => {
    const { subs, b } = workers();
    const stop = await b.onCallMessage('reply:r3', () => undefined);
    assert.equal(b.callListeners, 1);
    stop();
    await settle();
    assert.equal(b.callListeners, 0);
    assert.ok(!subs[1]!.channels.has('yuxi:held-call:reply:r3'));
  });
});
