import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import type { RunSignals } from '#libs/queue';
import { CallInFlight, ELICITATION_LOST, McpCallsInFlight, RemoteCall } from '#libs/runtime';

// A call that stopped at an MCP elicitation is held by the worker whose run asked; the answer
// comes in through whichever worker resumes the turn, and reaches the holder by RunSignals. The
// question and the plan around it are in mcp-elicitation.test.ts.

/** RunSignals between workers of one test: cancels and call messages delivered in order, asynchronously, as Redis pub/sub does. */
class SignalBus {
  private readonly handlers = new Map<string, (message: unknown) => void>();
  /** Messages sent, by kind, in order. */
  readonly sent: string[] = [];
  down = false;
  /** Kinds of message lost on the way (published, never delivered). */
  readonly lose = new Set<string>();
  /** Addresses whose worker is stalled: their messages wait until `resume`. */
  private readonly stalled = new Map<string, (() => void)[]>();

  forWorker(): RunSignals {
    return {
      onCancel: () => Promise.resolve(() => undefined),
      sendCallMessage: (address: string, message: object) => {
        if (this.down) return Promise.resolve(false);
        const kind = (message as { kind: string }).kind;
        this.sent.push(kind);
        if (this.lose.has(kind)) return Promise.resolve(true);
        const copy = JSON.parse(JSON.stringify(message)) as unknown;
        const deliver = (): void => this.handlers.get(address)?.(copy);
        const queue = this.stalled.get(address);
        if (queue) queue.push(deliver);
        else setImmediate(deliver);
        return Promise.resolve(true);
      },
      onCallMessage: (address: string, handler: (message: unknown) => void) => {
        this.handlers.set(address, handler);
        return Promise.resolve(() => {
          if (this.handlers.get(address) === handler) this.handlers.delete(address);
        });
      },
    } as unknown as RunSignals;
  }

  /** Addresses somebody listens at. */
  get listeners(): string[] {
    return [...this.handlers.keys()];
  }

  stall(address: string): void {
    this.stalled.set(address, []);
  }

  /** The stalled worker reads what queued up meanwhile, in order. */
  async resume(address: string): Promise<void> {
    const queue = this.stalled.get(address) ?? [];
    this.stalled.delete(address);
    for (const deliver of queue) deliver();
    await settle();
  }
}

/** Waits until `done` holds (at most 2 s). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(done());
}

/** Lets every message in flight on a SignalBus (and what it leads to) be delivered. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

describe('a call held by one worker, answered through another', () => {
  const config = new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', TOOL_TIMEOUT_MS: '5000' });
  const form = { message: 'name?', requestedSchema: { type: 'object' as const, properties: {} } };
  const workers = () => {
    const bus = new SignalBus();
    const holder = new McpCallsInFlight(config, bus.forWorker());
    const follower = new McpCallsInFlight(config, bus.forWorker());
    // Each side of the hand-over waits this long for the other (short here: the tests wait it out).
    holder.ackMs = follower.ackMs = 100;
    return { bus, holder, follower };
  };
  /** A call that asked its question and is held by `holder`, as the run that stopped at the waitpoint leaves it. */
  async function held(holder: McpCallsInFlight, key: string, run: (self: CallInFlight) => Promise<{ success: boolean; output: string; media?: any[] }>): Promise<CallInFlight> {
    const call = new CallInFlight(key, run);
    assert.ok('elicit' in (await call.next()));
    holder.hold(call, 'run-1');
    // The holder's subscription is in place once its registration settled.
    await new Promise((resolve) => setImmediate(resolve));
    return call;
  }

  it('the holder hands the answer to the server and the follower gets the real outcome, media included', async () => {
    const { holder, follower } = workers();
    await held(holder, 't:a', async (self) => {
      const reply = await self.elicit(form, new AbortController().signal);
      return { success: true, output: `server got ${reply.action} ${JSON.stringify(reply.content)}`, media: [{ kind: 'image', mimeType: 'image/png', data: Buffer.from('png!') }] };
    });
    const remote = await follower.reach('t:a', { action: 'accept', content: { name: 'Ada' } });
    assert.ok(remote instanceof RemoteCall);
    const next = await remote.next();
    assert.ok('outcome' in next);
    assert.equal(next.outcome.output, 'server got accept {"name":"Ada"}');
    assert.deepEqual(next.outcome.media?.map((m) => [m.kind, m.mimeType, m.data.toString()]), [['image', 'image/png', 'png!']]);
    assert.equal(holder.take('t:a'), undefined, 'the holder no longer holds it');
  });

  it('a second question comes back to the follower; held again, the next answer is taken where the call is', async () => {
    const { bus, holder, follower } = workers();
    await held(holder, 't:b', async (self) => {
      const first = await self.elicit(form, new AbortController().signal);
      const second = await self.elicit({ ...form, message: 'again?' }, new AbortController().signal);
      return { success: true, output: `${first.action} then ${second.action}` };
    });
    const remote = (await follower.reach('t:b', { action: 'accept', content: {} }))!;
    const next = await remote.next();
    assert.ok('elicit' in next && next.elicit.message === 'again?');
    remote.held('run-2');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(bus.sent, ['answer', 'accepted', 'confirm', 'elicit', 'hold']);
    // The resumed run of the second answer lands on the holder itself.
    const local = holder.take('t:b');
    assert.ok(local);
    local.answer({ action: 'decline' });
    assert.deepEqual(await local.next(), { outcome: { success: true, output: 'accept then decline' } });
  });

  it('the follower aborting the call aborts it at the holder', async () => {
    const { holder, follower } = workers();
    const call = await held(holder, 't:c', async (self) => {
      await self.elicit(form, new AbortController().signal);
      await new Promise((_, reject) => self.controller.signal.addEventListener('abort', () => reject(self.controller.signal.reason)));
      return { success: true, output: 'never' };
    });
    const remote = (await follower.reach('t:c', { action: 'accept', content: {} }))!;
    const next = remote.next();
    remote.controller.abort(new Error('turn cancelled'));
    await assert.rejects(next, /turn cancelled/);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(call.controller.signal.aborted, true);
  });

  it('nobody holding it (taken already) or Redis out of reach: the follower finds no call', async () => {
    const { bus, holder, follower } = workers();
    await held(holder, 't:d', async (self) => ({ success: true, output: (await self.elicit(form, new AbortController().signal)).action }));
    const taken = holder.take('t:d');
    assert.ok(taken, 'the holder resumed it itself');
    assert.equal(await follower.reach('t:d', { action: 'accept' }), null);
    bus.down = true;
    assert.equal(await follower.reach('t:e', { action: 'accept' }), null);
  });

  it('the follower stops listening for replies once it aborts the call or drops it', async () => {
    const { bus, holder, follower } = workers();
    for (const [key, drop] of [
      ['t:f', (remote: RemoteCall) => remote.controller.abort(new Error('turn cancelled'))],
      ['t:g', (remote: RemoteCall) => (remote.answer({ action: 'cancel' }), remote.controller.abort(new Error('the waitpoint could not be committed')))],
    ] as const) {
      await held(holder, key, async (self) => {
        await self.elicit(form, new AbortController().signal);
        await self.elicit(form, new AbortController().signal);
        return { success: true, output: 'x' };
      });
      const remote = (await follower.reach(key, { action: 'accept', content: {} }))!;
      const next = remote.next();
      if (key === 't:f') {
        drop(remote);
        await assert.rejects(next);
      } else {
        assert.ok('elicit' in (await next));
        drop(remote);
      }
      await settle();
      assert.deepEqual(
        bus.listeners.filter((address) => address.startsWith('reply:')),
        [],
        `${key}: no reply handler left`,
      );
    }
  });

  it('an answer the stalled holder reads after the follower gave up is never served, even where the revoke is lost', async () => {
    for (const loseRevoke of [false, true]) {
      const { bus, holder, follower } = workers();
      if (loseRevoke) bus.lose.add('revoke');
      let served: string | undefined;
      const call = await held(holder, 't:h', async (self) => {
        served = (await self.elicit(form, new AbortController().signal)).action;
        return { success: true, output: served };
      });
      bus.stall('call:t:h');
      // The follower waits its bound for the holder, then falls back (re-run or outcome unknown).
      assert.equal(await follower.reach('t:h', { action: 'accept', content: {} }), null);
      await bus.resume('call:t:h');
      // The holder took the answer late and said so, but the follower never confirmed it.
      assert.ok(bus.sent.includes('accepted'));
      assert.ok(!bus.sent.includes('confirm'));
      // Without the revoke, the holder's own bound for the confirm ends it.
      await until(() => served !== undefined);
      assert.match(String(call.controller.signal.reason), loseRevoke ? /not confirmed/ : /revoked/, 'and the call abandoned');
      assert.equal(served, 'cancel', `the server was told cancel, never the late answer (revoke ${loseRevoke ? 'lost' : 'delivered'})`);
      assert.equal(holder.take('t:h'), undefined);
    }
  });

  it('an answer to a call another delivery took already is answered gone: the follower falls back at once', async () => {
    const { bus, holder, follower } = workers();
    await held(holder, 't:i', async (self) => ({ success: true, output: (await self.elicit(form, new AbortController().signal)).action }));
    // The first delivery's answer is taken, but its confirm has not come yet.
    bus.lose.add('confirm');
    const first = follower.reach('t:i', { action: 'accept', content: {} });
    const second = await follower.reach('t:i', { action: 'decline' });
    assert.equal(second, null);
    assert.ok(bus.sent.includes('gone'));
    assert.ok(await first);
  });

  it('a holder that took an answer but never hears the confirm gives up and reports failed: the follower records the outcome unknown', async () => {
    const { bus, holder, follower } = workers();
    let served: string | undefined;
    await held(holder, 't:j', async (self) => {
      served = (await self.elicit(form, new AbortController().signal)).action;
      return { success: true, output: served };
    });
    bus.lose.add('confirm');
    const remote = (await follower.reach('t:j', { action: 'accept', content: {} }))!;
    assert.deepEqual(await remote.next(), { outcome: { success: false, output: ELICITATION_LOST } });
    assert.equal(served, 'cancel');
  });

  it('after a second question, an answer that reaches the holder before the follower\'s hold is taken', async () => {
    const { bus, holder, follower } = workers();
    await held(holder, 't:k', async (self) => {
      const first = await self.elicit(form, new AbortController().signal);
      const second = await self.elicit({ ...form, message: 'again?' }, new AbortController().signal);
      return { success: true, output: `${first.action} then ${second.action}` };
    });
    const remote = (await follower.reach('t:k', { action: 'accept', content: {} }))!;
    assert.ok('elicit' in (await remote.next()));
    // The resumed run of the second answer, on a third worker, overtakes the follower's 'hold'.
    const third = new McpCallsInFlight(config, bus.forWorker());
    third.ackMs = 100;
    const again = await third.reach('t:k', { action: 'decline' });
    assert.ok(again, 'the holder took the second answer');
    remote.held('run-2');
    assert.deepEqual(await again.next(), { outcome: { success: true, output: 'accept then decline' } });
    await settle();
    assert.equal(holder.take('t:k'), undefined, 'the late hold did not hold it again');
  });

  it('a holder shutting down reports failed for the call it serves before its signals close', async () => {
    const { bus, holder, follower } = workers();
    await held(holder, 't:l', async (self) => {
      await self.elicit(form, new AbortController().signal);
      await new Promise((_, reject) => self.controller.signal.addEventListener('abort', () => reject(self.controller.signal.reason)));
      return { success: true, output: 'never' };
    });
    const remote = (await follower.reach('t:l', { action: 'accept', content: {} }))!;
    const next = remote.next();
    await holder.beforeApplicationShutdown();
    assert.equal(bus.sent.at(-1), 'failed', 'sent before shutdown returned');
    assert.deepEqual(await next, { outcome: { success: false, output: ELICITATION_LOST } });
  });
});
