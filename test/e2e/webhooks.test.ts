import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '#libs/sdk';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, createSessionAs, newProductUser } from '../support/identity.js';
import { type ReceivedHook, WebhookReceiver } from '../support/webhook-receiver.js';

// Webhooks on the real stack: a local receiver (the suite's stack allows private targets and
// retries after 1 s, times out after 2 s), deliveries verified with the Standard Webhooks
// reference implementation. Each test has its own product user (its sessions are the only ones
// fanned out to its endpoints) and its own path on the receiver.

const HOOKS = `${API}/webhooks`;

function headersOf(hook: ReceivedHook): Record<string, string> {
  return { 'webhook-id': String(hook.headers['webhook-id']), 'webhook-timestamp': String(hook.headers['webhook-timestamp']), 'webhook-signature': String(hook.headers['webhook-signature']) };
}

/** Verifies a delivery with the reference implementation (throws when the signature or the timestamp is wrong). */
function verified(secret: string, hook: ReceivedHook): any {
  return new Webhook(secret).verify(hook.body, headersOf(hook));
}

describe('webhooks', () => {
  let receiver: WebhookReceiver;
  before(async () => {
    receiver = await WebhookReceiver.start();
  });
  after(() => receiver.close());

  async function endpoint(caller: Caller, path: string, extra: object = {}): Promise<{ id: string; secret: string }> {
    const res = await call(caller, HOOKS, { body: { url: `${receiver.url}${path}`, ...extra } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  /**
   * The endpoint's delivery log once no delivery is pending: the receiver has an attempt as soon as
   * it answers, the log only once the worker has recorded it.
   */
  async function settledLog(caller: Caller, endpointId: string): Promise<any[]> {
    for (let i = 0; ; i += 1) {
      const log = await call(caller, `${HOOKS}/${endpointId}/deliveries`);
      assert.equal(log.status, 200, log.text);
      if (!log.body.data.some((d: any) => d.status === 'pending') || i >= 100) return log.body.data;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function user(name: string): Promise<Caller> {
    return (await newProductUser(name)).caller;
  }

  it('announces a created session and its completed turn, signed (verified by standardwebhooks and the SDK), thin, with the event ids', async () => {
    const caller = await user('webhook owner');
    const created = await endpoint(caller, '/basic', { description: 'basic' });
    assert.match(created.secret, /^whsec_/);
    // The secret is shown once: never by a read or a list.
    const read = await call(caller, `${HOOKS}/${created.id}`);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.secret, undefined);
    assert.equal(read.body.enabled, true);
    const listed = await call(caller, HOOKS);
    assert.deepEqual(listed.body.data.map((e: any) => [e.id, e.secret]), [[created.id, undefined]]);

    const session = await createSessionAs(caller, 'hello hooks');
    await receiver.waitFor('the turn completed', () => receiver.at('/basic').some((h) => h.json?.type === 'agent.session.turn.completed'));
    const hooks = receiver.at('/basic');
    const types = hooks.map((h) => h.json.type);
    assert.deepEqual(types, ['agent.session.created', 'agent.session.turn.completed']);
    for (const hook of hooks) {
      const payload = verified(created.secret, hook);
      assert.deepEqual(await verifyWebhook(created.secret, headersOf(hook), hook.body), payload);
      assert.equal(hook.headers['webhook-id'], payload.id);
      assert.equal(payload.data.session_id, session.id);
      assert.equal(hook.headers['content-type'], 'application/json');
    }
    const completed = hooks[1]!.json;
    assert.equal(completed.data.status, 'completed');
    assert.equal(typeof completed.data.turn_id, 'string');
    assert.ok(completed.yuxi.seq > hooks[0]!.json.yuxi.seq);
    // The ids are the session events' ids.
    const items = await call(caller, `${API}/sessions/${session.id}/turns/${completed.data.turn_id}`);
    assert.equal(items.status, 200, items.text);
    assert.equal(items.body.status, 'completed');
    // A forged body does not verify.
    assert.throws(() => new Webhook(created.secret).verify(hooks[1]!.body.replace('completed', 'failed'), headersOf(hooks[1]!)));

    // The delivery log shows both, succeeded in one attempt each.
    const log = await settledLog(caller, created.id);
    assert.deepEqual(log.map((d: any) => [d.event_type, d.status, d.attempts.length, d.attempts[0].status_code, d.attempts[0].outcome]).sort(), [
      ['agent.session.created', 'succeeded', 1, 200, 'succeeded'],
      ['agent.session.turn.completed', 'succeeded', 1, 200, 'succeeded'],
    ]);
    assert.equal(log.find((d: any) => d.event_type === 'agent.session.turn.completed').event_id, completed.id);
  });

  it('retries a 500 with the same webhook-id and a fresh valid signature each time', async () => {
    const caller = await user('webhook retries');
    const created = await endpoint(caller, '/flaky', { event_types: ['agent.session.turn.completed'] });
    let failures = 0;
    receiver.answer = (hook) => (hook.path === '/flaky' && failures++ < 2 ? { status: 500, body: 'boom' } : { status: 200, body: '{"ok":true}' });
    try {
      await createSessionAs(caller, 'flaky receiver');
      await receiver.waitFor('three attempts', () => receiver.at('/flaky').length >= 3);
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
    const attempts = receiver.at('/flaky');
    assert.equal(attempts.length, 3, 'delivered on the third attempt, then no more');
    assert.equal(new Set(attempts.map((h) => h.headers['webhook-id'])).size, 1);
    for (const hook of attempts) verified(created.secret, hook);
    const stamps = attempts.map((h) => Number(h.headers['webhook-timestamp']));
    assert.ok(stamps[2]! >= stamps[0]! + 1, `signed afresh: ${stamps.join(', ')}`);
    const [delivery] = await settledLog(caller, created.id);
    assert.equal(delivery.status, 'succeeded');
    assert.deepEqual(delivery.attempts.map((a: any) => [a.attempt, a.status_code, a.outcome]), [
      [1, 500, 'failed'],
      [2, 500, 'failed'],
      [3, 200, 'succeeded'],
    ]);
    assert.equal(delivery.attempts[0].response_excerpt, 'boom');
  });

  it('disables an endpoint that answers 410, says why, and audits it', async () => {
    const caller = await user('webhook gone');
    const created = await endpoint(caller, '/gone');
    // The owner's second endpoint: what reaches it shows what could have reached the disabled one.
    await endpoint(caller, '/gone-witness');
    receiver.answer = (hook) => (hook.path === '/gone' ? { status: 410 } : { status: 200 });
    try {
      await createSessionAs(caller);
      await receiver.waitFor('the 410', () => receiver.at('/gone').length >= 1);
      let read: any;
      for (let i = 0; i < 100; i += 1) {
        read = (await call(caller, `${HOOKS}/${created.id}`)).body;
        if (!read.enabled) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(read.enabled, false);
      assert.equal(read.disabled_reason, 'gone');
      assert.equal(typeof read.disabled_at, 'number');
      // Nothing more goes to it, though the next session's events reach the owner's other endpoint.
      const later = await createSessionAs(caller, 'after the 410');
      await receiver.waitFor('the later turn at the other endpoint', () =>
        receiver.at('/gone-witness').some((h) => h.json?.type === 'agent.session.turn.completed' && h.json.data.session_id === later.id),
      );
      const audit = await call(bootstrap, `${ADMIN}/audit?limit=100`);
      assert.ok(audit.body.data.some((entry: any) => entry.action === 'webhook_endpoint.disabled' && entry.target.id === created.id && entry.details.reason === 'gone'), 'audited');
      assert.equal(receiver.at('/gone').length, 1);
      // Enabled again by its owner, it receives again.
      const enabled = await call(caller, `${HOOKS}/${created.id}`, { body: { enabled: true } });
      assert.equal(enabled.status, 200, enabled.text);
      assert.equal(enabled.body.disabled_reason, null);
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });

  it('records a binary answer (a NUL byte included) as a success, once', async () => {
    const caller = await user('webhook binary answer');
    const created = await endpoint(caller, '/binary', { event_types: ['agent.session.created'] });
    receiver.answer = (hook) => (hook.path === '/binary' ? { status: 200, body: 'ok\u0000\u0001binary' } : { status: 200 });
    try {
      await createSessionAs(caller);
      await receiver.waitFor('the delivery', () => receiver.at('/binary').length >= 1);
      const [delivery] = await settledLog(caller, created.id);
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.attempts[0].response_excerpt, 'ok\uFFFD\u0001binary');
      assert.equal(receiver.at('/binary').length, 1, 'sent once');
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });

  it('counts a slow receiver as a timeout and retries it', async () => {
    const caller = await user('webhook slow');
    const created = await endpoint(caller, '/slow', { event_types: ['agent.session.created'] });
    let first = true;
    receiver.answer = (hook) => {
      if (hook.path !== '/slow' || !first) return { status: 200 };
      first = false;
      return { status: 200, delayMs: 20_000 };
    };
    try {
      await createSessionAs(caller);
      await receiver.waitFor('the retry after the timeout', () => receiver.at('/slow').length >= 2);
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
    const [delivery] = await settledLog(caller, created.id);
    assert.equal(delivery.status, 'succeeded');
    assert.deepEqual(delivery.attempts.map((a: any) => [a.outcome, a.status_code]), [
      ['timeout', null],
      ['succeeded', 200],
    ]);
    assert.ok(delivery.attempts[0].duration_ms >= 1_900, `the stack's WEBHOOK_TIMEOUT_MS is 2 s: ${delivery.attempts[0].duration_ms}`);
  });

  it('keeps each session\'s order under 50 concurrent sessions, a failed first attempt holding back what follows', async () => {
    const caller = await user('webhook order');
    const created = await endpoint(caller, '/order', { event_types: ['agent.session.created', 'agent.session.turn.completed'] });
    // Every session's first delivery fails once: its turn's completion must wait for it.
    const failedOnce = new Set<string>();
    receiver.answer = (hook) => {
      if (hook.path !== '/order' || hook.json?.type !== 'agent.session.created' || failedOnce.has(hook.json.id)) return { status: 200 };
      failedOnce.add(hook.json.id);
      return { status: 503 };
    };
    try {
      const sessions = await Promise.all(Array.from({ length: 50 }, (_, i) => createSessionAs(caller, `order ${i}`)));
      const ok = () => receiver.at('/order').filter((h) => failedOnce.has(h.json.id) || h.json.type === 'agent.session.turn.completed');
      await receiver.waitFor('every session\'s two events', () => new Set(ok().map((h) => `${h.json.id}`)).size >= 100, 60_000);
      const bySession = new Map<string, ReceivedHook[]>();
      for (const hook of receiver.at('/order')) bySession.set(hook.json.data.session_id, [...(bySession.get(hook.json.data.session_id) ?? []), hook]);
      assert.equal(bySession.size, 50);
      for (const session of sessions) {
        const hooks = bySession.get(session.id)!;
        // created (503), created again (200), then completed: never the completion first.
        assert.deepEqual(hooks.map((h) => h.json.type), ['agent.session.created', 'agent.session.created', 'agent.session.turn.completed'], session.id);
        const seqs = hooks.map((h) => h.json.yuxi.seq);
        assert.ok(seqs[0] === seqs[1] && seqs[1] < seqs[2], `seqs ${seqs.join(', ')}`);
        for (const hook of hooks) verified(created.secret, hook);
      }
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });

  it('rotates the secret: both sign for a day, the new one is shown once', async () => {
    const caller = await user('webhook rotation');
    const created = await endpoint(caller, '/rotate', { event_types: ['agent.session.created'] });
    const rotated = await call(caller, `${HOOKS}/${created.id}/rotate-secret`, { method: 'POST' });
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.secret, created.secret);
    assert.ok(rotated.body.previous_secret_expires_at - Math.floor(Date.now() / 1000) > 23 * 3600);
    await createSessionAs(caller);
    await receiver.waitFor('the delivery after the rotation', () => receiver.at('/rotate').length >= 1);
    const [hook] = receiver.at('/rotate');
    assert.equal(String(hook!.headers['webhook-signature']).split(' ').length, 2);
    verified(rotated.body.secret, hook!);
    verified(created.secret, hook!);
    assert.deepEqual(await verifyWebhook(rotated.body.secret, headersOf(hook!), hook!.body), hook!.json);
    assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(hook!.body, headersOf(hook!)));
    const audit = await call(bootstrap, `${ADMIN}/audit?limit=100`);
    assert.ok(audit.body.data.some((entry: any) => entry.action === 'webhook_endpoint.secret_rotated' && entry.target.id === created.id));
  });

  it('sends a test event, and redelivers a delivery with the same webhook-id', async () => {
    const caller = await user('webhook test send');
    const created = await endpoint(caller, '/test-send', { event_types: ['agent.session.turn.completed'] });
    const test = await call(caller, `${HOOKS}/${created.id}/test`, { method: 'POST' });
    assert.equal(test.status, 202, test.text);
    assert.equal(test.body.event_type, 'webhook.test');
    await receiver.waitFor('the test event', () => receiver.at('/test-send').length >= 1);
    const [sent] = receiver.at('/test-send');
    assert.deepEqual(verified(created.secret, sent!), { id: test.body.event_id, type: 'webhook.test', created_at: sent!.json.created_at, data: { endpoint_id: created.id } });

    const session = await createSessionAs(caller, 'redeliver me');
    await receiver.waitFor('the completion', () => receiver.at('/test-send').some((h) => h.json.type === 'agent.session.turn.completed'));
    const original = (await settledLog(caller, created.id)).find((d: any) => d.event_type === 'agent.session.turn.completed' && d.status === 'succeeded');
    assert.equal(original.session_id, session.id);
    const again = await call(caller, `${HOOKS}/${created.id}/deliveries/${original.id}/redeliver`, { method: 'POST' });
    assert.equal(again.status, 202, again.text);
    assert.equal(again.body.redelivery_of, original.id);
    assert.equal(again.body.event_id, original.event_id);
    await receiver.waitFor('the redelivery', () => receiver.at('/test-send').filter((h) => h.json.type === 'agent.session.turn.completed').length >= 2);
    const both = receiver.at('/test-send').filter((h) => h.json.type === 'agent.session.turn.completed');
    assert.equal(both[0]!.headers['webhook-id'], both[1]!.headers['webhook-id']);
    assert.equal(both[0]!.body, both[1]!.body);
    verified(created.secret, both[1]!);
  });

  it('delivers only the event types an endpoint chose, and only its owner\'s sessions', async () => {
    const caller = await user('webhook filter');
    const other = await user('webhook other owner');
    const mine = await endpoint(caller, '/filtered', { event_types: ['agent.session.turn.completed'] });
    // The other owner's endpoint: an event is fanned out to every matching endpoint in one
    // statement, so once the other session's completion reaches it, a wrong fan-out to ours exists.
    await endpoint(other, '/filtered-other', { event_types: ['agent.session.turn.completed'] });
    const theirs = await createSessionAs(other, 'not yours');
    const yours = await createSessionAs(caller, 'yours');
    await receiver.waitFor('both completions', () => receiver.at('/filtered').length >= 1 && receiver.at('/filtered-other').length >= 1);
    assert.deepEqual(receiver.at('/filtered-other').map((h) => [h.json.type, h.json.data.session_id]), [['agent.session.turn.completed', theirs.id]]);
    const log = await settledLog(caller, mine.id);
    assert.deepEqual(log.map((d: any) => [d.event_type, d.session_id]), [['agent.session.turn.completed', yours.id]], 'only its owner\'s session, of the chosen type');
    assert.deepEqual(receiver.at('/filtered').map((h) => [h.json.type, h.json.data.session_id]), [['agent.session.turn.completed', yours.id]]);
  });

  it('refuses private, loopback, link-local and metadata targets where private networks are not allowed', async () => {
    const { caller } = await newProductUser('webhook ssrf');
    const refused = ['https://127.0.0.1/hook', 'https://169.254.169.254/latest/meta-data', 'https://[::1]/hook', 'https://localhost/hook', 'https://10.1.2.3/hook', 'http://hooks.example.com/plain-http'];
    for (const url of refused) {
      const res = await call(caller, HOOKS, { body: { url }, baseUrl: env.apiUrlFileLimits });
      assert.equal(res.status, 422, `${url}: ${res.text}`);
      assert.equal(res.body.error.code, 'webhook_url_not_allowed', url);
    }
    // The same rule on an update.
    const created = await call(caller, HOOKS, { body: { url: `${receiver.url}/ssrf` } });
    assert.equal(created.status, 201, created.text);
    const moved = await call(caller, `${HOOKS}/${created.body.id}`, { body: { url: 'https://169.254.169.254/x' }, baseUrl: env.apiUrlFileLimits });
    assert.equal(moved.status, 422, moved.text);
    assert.equal(moved.body.error.code, 'webhook_url_not_allowed');
    const list = await call(caller, HOOKS);
    assert.deepEqual(list.body.data.map((e: any) => e.url), [`${receiver.url}/ssrf`], 'nothing refused was stored');
  });

  it('answers bad input with 4xx and another owner\'s endpoint with 404', async () => {
    const caller = await user('webhook validation');
    const stranger = await user('webhook stranger');
    const created = await endpoint(caller, '/validation');
    const cases: [object, string][] = [
      [{ url: `${receiver.url}/x`, event_types: ['agent.session.turn.unknown'] }, 'validation_failed'],
      [{ url: `${receiver.url}/x`, event_types: [] }, 'validation_failed'],
      [{ url: `${receiver.url}/x`, extra: 1 }, 'validation_failed'],
      [{ url: 'not a url at all' }, 'webhook_url_not_allowed'],
      [{}, 'validation_failed'],
      // 1,014 characters as sent, 6,014 once percent-encoded: too long to store.
      [{ url: `https://hooks.example.com/${'é'.repeat(1_000)}` }, 'validation_failed'],
    ];
    for (const [body, code] of cases) {
      const res = await call(caller, HOOKS, { body });
      assert.equal(res.body?.error?.code, code, `${JSON.stringify(body)}: ${res.text}`);
    }
    for (const path of [`${HOOKS}/${created.id}`, `${HOOKS}/${created.id}/deliveries`, `${HOOKS}/not-a-uuid`]) {
      const res = await call(stranger, path);
      assert.equal(res.status, 404, `${path}: ${res.text}`);
    }
    assert.equal((await call(stranger, `${HOOKS}/${created.id}/rotate-secret`, { method: 'POST' })).status, 404);
    assert.equal((await call(caller, `${HOOKS}/${created.id}/deliveries/not-a-uuid/redeliver`, { method: 'POST' })).status, 404);
    const deleted = await call(caller, `${HOOKS}/${created.id}`, { method: 'DELETE' });
    assert.deepEqual(deleted.body, { id: created.id, object: 'webhook_endpoint', deleted: true });
    assert.equal((await call(caller, `${HOOKS}/${created.id}`)).status, 404);
  });
});
