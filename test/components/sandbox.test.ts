import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { SandboxedThread } from '#libs/sandbox';
import type { EchoReply, EchoRequest } from '../support/sandbox-worker.js';

const url = new URL('../support/sandbox-worker.js', import.meta.url);

describe('SandboxedThread', () => {
  const thread = new SandboxedThread<EchoRequest, EchoReply>({ url, heapLimitMb: 32 });
  after(() => thread.close());

  it('answers a request with the reply carrying its id, from one thread reused', async () => {
    const first = await thread.request({ text: 'one' }, { timeoutMs: 5_000 });
    const second = await thread.request({ text: 'two' }, { timeoutMs: 5_000 });
    assert.equal(first.kind, 'reply');
    assert.equal(second.kind, 'reply');
    if (first.kind !== 'reply' || second.kind !== 'reply') return;
    assert.equal(first.reply.text, 'one');
    assert.equal(second.reply.text, 'two');
    assert.equal(second.reply.threadId, first.reply.threadId);
  });

  it('starts the thread with an empty environment and no code generation from strings', async () => {
    process.env.DATABASE_URL ??= 'postgres://user:secret@db/app';
    const result = await thread.request({ text: 'probe', probe: true }, { timeoutMs: 5_000 });
    assert.equal(result.kind, 'reply');
    if (result.kind !== 'reply') return;
    const probe = result.reply.probe!;
    assert.equal(probe.databaseUrl, undefined);
    assert.equal(probe.envKeys, 0);
    for (const attempt of [probe.eval, probe.newFunction, probe.asyncFunction, probe.viaConstructor]) {
      assert.match(attempt, /^EvalError: code generation from strings is disallowed/);
    }
    // The lock-down is the thread's own: this thread still compiles (ajv needs it).
    assert.equal(new Function('return 2')(), 2);
  });

  it('lets a thread that asks for it keep code from strings', async () => {
    const open = new SandboxedThread<EchoRequest, EchoReply>({ url, heapLimitMb: 32, allowCodeFromStrings: true });
    try {
      const result = await open.request({ text: 'probe', probe: true }, { timeoutMs: 5_000 });
      assert.equal(result.kind === 'reply' && result.reply.probe?.newFunction, 'ran');
    } finally {
      open.close();
    }
  });

  it('answers timeout for a request that never finishes, and serves the next one from a fresh thread', async () => {
    const before = await thread.request({ text: 'before' }, { timeoutMs: 5_000 });
    assert.deepEqual(await thread.request({ text: 'stuck', hang: true }, { timeoutMs: 200 }), { kind: 'timeout' });
    const next = await thread.request({ text: 'next' }, { timeoutMs: 5_000 });
    assert.equal(before.kind, 'reply');
    assert.equal(next.kind, 'reply');
    if (before.kind !== 'reply' || next.kind !== 'reply') return;
    assert.equal(next.reply.text, 'next');
    assert.notEqual(next.reply.threadId, before.reply.threadId);
  });

  it('rejects with the signal\'s reason when a running request is aborted, and replaces the thread', async () => {
    const before = await thread.request({ text: 'before' }, { timeoutMs: 5_000 });
    const controller = new AbortController();
    const stuck = thread.request({ text: 'stuck', hang: true }, { timeoutMs: 60_000, signal: controller.signal });
    // The thread is up (the request before), so the stuck one is posted at once and aborted while it runs.
    setTimeout(() => controller.abort(new Error('turn cancelled')), 100);
    await assert.rejects(stuck, /turn cancelled/);
    const next = await thread.request({ text: 'next' }, { timeoutMs: 5_000 });
    assert.equal(before.kind, 'reply');
    assert.equal(next.kind, 'reply');
    if (before.kind !== 'reply' || next.kind !== 'reply') return;
    assert.notEqual(next.reply.threadId, before.reply.threadId);
  });

  it('rejects a request given up while it waits, at once, and goes on with the queue', async () => {
    const wait = new AbortController();
    const first = thread.request({ text: 'first' }, { timeoutMs: 5_000 });
    const waiting = thread.request({ text: 'dropped' }, { timeoutMs: 5_000, wait: wait.signal });
    wait.abort(new Error('gave up'));
    await assert.rejects(waiting, /gave up/);
    assert.equal((await first).kind, 'reply');
    assert.equal((await thread.request({ text: 'later' }, { timeoutMs: 5_000 })).kind, 'reply');
  });
});
