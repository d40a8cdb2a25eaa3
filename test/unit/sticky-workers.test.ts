import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AppConfig, RedisClient } from '#libs/config';
import { lingerKey, type RunSignals, SessionDispatcher, SessionLinger } from '#libs/queue';
import { DrivePasses, type SessionDriver } from '#libs/runtime';

const config = (workerLingerMs = 2_000, workerConcurrency = 2) => ({ workerLingerMs, workerConcurrency }) as AppConfig;

/** A Redis client that runs the wake script as Redis would: GET the key, PUBLISH to the address's channel, return the receivers. */
function fakeRedis(listeners: Map<string, number>, keys = new Map<string, string>(), fail = false) {
  const calls: string[] = [];
  const client = {
    defineCommand(name: string) {
      (client as Record<string, unknown>)[name] = async (key: string, prefix: string, sessionId: string) => {
        calls.push(`wake ${key} ${sessionId}`);
        if (fail) throw new Error('Redis is down');
        const address = keys.get(key);
        return address === undefined ? 0 : (listeners.get(`${prefix}${address}`) ?? 0);
      };
    },
    set: async (key: string, value: string, px: string, ms: number) => {
      calls.push(`set ${key} ${value} ${px} ${ms}`);
      keys.set(key, value);
      return 'OK';
    },
  };
  return { client: client as unknown as RedisClient, calls, keys };
}

function dispatcherWith(wakes: boolean) {
  const added: unknown[] = [];
  const queue = { add: async (...args: unknown[]) => void added.push(args) };
  const linger = { wake: async () => wakes } as unknown as SessionLinger;
  return { dispatcher: new SessionDispatcher(queue as never, linger), added };
}

describe('sticky workers: the nudge publishes to a lingering worker or sends the job', () => {
  it('sends no job when a worker listening for the session received the wake-up', async () => {
    const { dispatcher, added } = dispatcherWith(true);
    await dispatcher.nudgeQuietly('s1');
    assert.equal(added.length, 0);
  });

  it('sends the deduplicated job when no worker received it, and always from enqueueQuietly', async () => {
    const { dispatcher, added } = dispatcherWith(false);
    await dispatcher.nudgeQuietly('s1');
    assert.equal(added.length, 1);
    assert.deepEqual((added[0] as [string, unknown, { deduplication: unknown }])[2].deduplication, { id: 's1', keepLastIfActive: true });
    const woken = dispatcherWith(true);
    await woken.dispatcher.enqueueQuietly('s1');
    assert.equal(woken.added.length, 1, 'the sweep and a busy worker never rely on the hint');
  });

  it('wakes only when the linger key names a worker whose channel has a listener', async () => {
    const listeners = new Map([['yuxi:linger-wake:w1', 1]]);
    const { client, keys } = fakeRedis(listeners);
    const linger = new SessionLinger(client, config());
    assert.equal(await linger.wake('s1'), false, 'no linger key');
    await linger.linger('s1', 'w2');
    assert.equal(await linger.wake('s1'), false, 'the worker it lingers on is gone (nobody listens)');
    await linger.linger('s1', 'w1');
    assert.equal(keys.get(lingerKey('s1')), 'w1');
    assert.equal(await linger.wake('s1'), true);
    assert.equal(lingerKey('s1'), 'yuxi:linger:{s1}', 'the session id is the hash tag');
  });

  it('answers false on a Redis error, and does nothing at all when WORKER_LINGER_MS is 0', async () => {
    assert.equal(await new SessionLinger(fakeRedis(new Map(), new Map(), true).client, config()).wake('s1'), false);
    const off = fakeRedis(new Map());
    const linger = new SessionLinger(off.client, config(0));
    await linger.linger('s1', 'w1');
    assert.equal(await linger.wake('s1'), false);
    assert.deepEqual(off.calls, []);
  });
});

/** A driver whose passes end when the test says so. */
function fakeDriver() {
  const passes: { sessionId: string; end: (turns: number) => void }[] = [];
  const driver = {
    isClaiming: true,
    drive: (sessionId: string) => new Promise<number>((resolve) => passes.push({ sessionId, end: resolve })),
  };
  return { driver, passes };
}

async function drivePasses(workerConcurrency = 2) {
  const { driver, passes } = fakeDriver();
  const enqueued: string[] = [];
  const lingered: string[] = [];
  let wake: (sessionId: string) => void = () => undefined;
  const linger = { enabled: true, linger: async (sessionId: string) => void lingered.push(sessionId) } as unknown as SessionLinger;
  const dispatcher = { enqueueQuietly: async (sessionId: string) => void enqueued.push(sessionId) } as unknown as SessionDispatcher;
  const signals = { onWake: async (_address: string, handler: (sessionId: string) => void) => void (wake = handler) } as unknown as RunSignals;
  const subject = new DrivePasses(driver as unknown as SessionDriver, linger, dispatcher, signals, config(2_000, workerConcurrency));
  await subject.onApplicationBootstrap();
  return { subject, driver, passes, enqueued, lingered, wake: (sessionId: string) => wake(sessionId) };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('sticky workers: a wake-up on the worker', () => {
  it('drives the session as a job would, marking it as lingering here', async () => {
    const t = await drivePasses();
    t.wake('s1');
    await settled();
    assert.deepEqual(t.passes.map((p) => p.sessionId), ['s1']);
    assert.deepEqual(t.lingered, ['s1']);
    t.passes[0]!.end(1);
    await settled();
    assert.deepEqual(t.enqueued, []);
    assert.equal(t.subject.inProgress, 0);
  });

  it('at WORKER_CONCURRENCY, hands the session to the queue instead of waiting', async () => {
    const t = await drivePasses(1);
    const job = t.subject.drive('busy');
    await settled();
    t.wake('s1');
    await settled();
    assert.deepEqual(t.enqueued, ['s1']);
    assert.deepEqual(t.passes.map((p) => p.sessionId), ['busy']);
    t.passes[0]!.end(1);
    assert.equal(await job, 1);
  });

  it('while shutting down, hands the session to the queue', async () => {
    const t = await drivePasses();
    t.driver.isClaiming = false;
    t.wake('s1');
    await settled();
    assert.deepEqual(t.enqueued, ['s1']);
    assert.equal(t.passes.length, 0);
  });

  it('shutting down, hands a wake-up that arrived during a job pass to the queue', async () => {
    const t = await drivePasses();
    const job = t.subject.drive('s1');
    await settled();
    t.wake('s1');
    t.driver.isClaiming = false;
    t.passes[0]!.end(1);
    assert.equal(await job, 1);
    assert.deepEqual(t.enqueued, ['s1']);
    assert.equal(t.passes.length, 1);
  });

  it('for a session it drives now, makes that pass look at the queue again before it ends', async () => {
    // The input may have committed after the pass's settle looked: the pass must not end on that look.
    const t = await drivePasses();
    const job = t.subject.drive('s1');
    await settled();
    t.wake('s1');
    await settled();
    assert.equal(t.passes.length, 1, 'no second pass beside the running one');
    t.passes[0]!.end(1);
    await settled();
    assert.equal(t.passes.length, 2, 'the pass drives again');
    t.passes[1]!.end(1);
    assert.equal(await job, 2);
    assert.deepEqual(t.enqueued, []);
  });
});
