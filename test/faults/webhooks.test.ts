// Fault scenario m: webhook delivery survives the death of the worker that is delivering and the
// loss of Redis's data. A local receiver holds every request open (never answers), so each
// chain's head is mid-attempt under its Postgres lease; the worker is killed (-9), Redis is killed
// (-9, in-memory: its jobs are gone) and restarted, a new worker starts, and the receiver answers
// 200 from then on. Nothing committed may be lost: per session, every event the outbox announced
// reaches the receiver (dedup on webhook-id), in yuxi.seq order, and the delivery log says so.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookPayloadOf } from '#libs/webhooks';
import { type ReceivedHook, WebhookReceiver } from '../support/webhook-receiver.js';
import { API, Api } from './client.js';
import { assertInvariants, Cluster, type FaultInfra, startFaultInfra, waitQuiescent, waitUntil } from './harness.js';

const HOOKS = `${API}/webhooks`;
const SESSIONS = 5;
/** Long enough that a held attempt is still in flight when the worker is killed. */
const WEBHOOK_TIMEOUT_MS = 4_000;
/** The delivery lease: WEBHOOK_TIMEOUT_MS + the deliverer's 15 s margin (webhook-deliverer.ts). */
const DELIVERY_LEASE_MS = WEBHOOK_TIMEOUT_MS + 15_000;
/** How long after the first held request the worker is killed at the latest: well inside the timeout. */
const KILL_WITHIN_MS = 1_500;
const WEBHOOK_ENV = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
  WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
  WEBHOOK_SWEEP_MS: '500',
};

const headersOf = (hook: ReceivedHook) => ({
  'webhook-id': String(hook.headers['webhook-id']),
  'webhook-timestamp': String(hook.headers['webhook-timestamp']),
  'webhook-signature': String(hook.headers['webhook-signature']),
});

describe('faults: webhooks', () => {
  let infra: FaultInfra;
  let receiver: WebhookReceiver;
  before(async () => {
    infra = await startFaultInfra('webhooks');
    receiver = await WebhookReceiver.start();
  });
  after(async () => {
    await receiver?.close();
    // A failed scenario may leave Redis down; bring it back for a clean stop.
    await infra?.redis.start().catch(() => undefined);
    await infra?.stop();
  });

  it('m. worker kill -9 mid-delivery and Redis data loss: every committed event is still delivered, in order per session, none lost', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'm-webhook-kill9-redis-loss', { apis: 1, workers: 1, env: WEBHOOK_ENV });
    const path = `/m-${randomUUID().slice(0, 8)}`;
    let holding = true;
    receiver.answer = (hook) => (hook.path === path && holding ? { status: 200, delayMs: 600_000 } : { status: 200, body: '{"ok":true}' });
    try {
      // A product user of its own: its sessions are the only ones fanned out to its endpoint.
      const admin = cluster.api();
      const key = await admin.request(`/api/v1/admin/api-keys`, { body: { name: 'fault m', access: 'full', user_id: randomUUID() } });
      assert.equal(key.status, 201, key.text);
      const api = new Api(admin.baseUrl, key.body.secret as string);
      const endpoint = await api.request(HOOKS, { body: { url: `${receiver.url}${path}`, event_types: ['agent.session.created', 'agent.session.turn.completed'] } });
      assert.equal(endpoint.status, 201, endpoint.text);
      const { id: endpointId, secret } = endpoint.body as { id: string; secret: string };

      const sessionIds: string[] = [];
      for (let i = 0; i < SESSIONS; i++) sessionIds.push((await api.createSession(`webhook fault ${i}`)).id as string);

      // The worker attempts the chains' heads; the receiver holds them. Kill once every session's
      // head is held and every turn has ended (their completions wait behind the heads), or
      // KILL_WITHIN_MS after the first held request, whichever comes first.
      await receiver.waitFor('the first delivery attempt', () => receiver.at(path).length > 0, 20_000);
      const firstHeldAt = receiver.at(path)[0]!.at;
      await waitUntil(
        'every head held and every turn ended, or the kill deadline',
        async () => {
          if (Date.now() - firstHeldAt >= KILL_WITHIN_MS) return true;
          if (new Set(receiver.at(path).map((h) => h.json?.data?.session_id)).size < SESSIONS) return false;
          const { rows } = await infra.db.query(`SELECT count(*)::int AS n FROM turns WHERE session_id = ANY($1::uuid[]) AND status IN ('queued', 'in_progress')`, [sessionIds]);
          return rows[0].n === 0;
        },
        { timeoutMs: KILL_WITHIN_MS + 1_000, intervalMs: 50 },
      );
      const [victim] = cluster.workers;
      cluster.signal(victim!, 'SIGKILL');
      const killedAt = Date.now();
      assert.ok(await cluster.waitExit(victim!, 5_000), 'the killed worker is gone');
      const held = receiver.at(path).map((h) => String(h.headers['webhook-id']));
      t.diagnostic(`killed ${victim!.name} (pid ${victim!.pid}) ${killedAt - firstHeldAt} ms after the first held request; ${held.length} request(s) held`);

      // Mid-attempt: the held deliveries are claimed (attempt 1 leased) and have no outcome (an
      // attempt that had timed out before the kill would be recorded, and the check below fail).
      const during = await api.request(`${HOOKS}/${endpointId}/deliveries?limit=100`);
      assert.equal(during.status, 200, during.text);
      for (const id of held) {
        const delivery = during.body.data.find((d: any) => d.event_id === id);
        assert.ok(delivery, `the held event ${id} has a delivery`);
        assert.deepEqual([delivery.status, delivery.attempt_count, delivery.attempts.length], ['pending', 1, 0], `the held delivery ${id} is mid-attempt: ${JSON.stringify(delivery)}`);
      }

      // Redis loses its data (the harness's Redis is in-memory: kill -9 and restart is a wipe),
      // and with it every queued, delayed and active webhook job and the sweep's scheduler.
      await infra.redis.kill('SIGKILL');
      await infra.redis.start();
      assert.equal(receiver.at(path).length, held.length, 'no request while no worker was up');
      holding = false;
      await cluster.addWorker();
      t.diagnostic(`redis restarted and a new worker up ${Date.now() - killedAt} ms after the kill`);

      // What happened, per the API: every turn ended completed. The outbox's announced events are
      // what must arrive (the same filter the outbox applies to fan out).
      await waitQuiescent(infra, sessionIds, 30_000);
      const expected = new Map<string, { seq: number; type: string }>();
      const expectedBySession = new Map<string, string[]>(sessionIds.map((id) => [id, []]));
      for (const sessionId of sessionIds) {
        const turns = await api.turns(sessionId);
        assert.ok(turns.length >= 1 && turns.every((turn) => turn.status === 'completed'), `session ${sessionId}: its turns completed: ${turns.map((turn) => turn.status).join(', ')}`);
        const { rows } = await infra.db.query(`SELECT seq, event_id, type, payload FROM session_events WHERE session_id = $1 ORDER BY seq`, [sessionId]);
        for (const row of rows) {
          const payload = webhookPayloadOf(JSON.parse(row.payload), String(row.seq));
          if (!payload || !['agent.session.created', 'agent.session.turn.completed'].includes(payload.type)) continue;
          expected.set(row.event_id, { seq: Number(row.seq), type: row.type });
          expectedBySession.get(sessionId)!.push(row.event_id);
        }
        const announcedTurns = rows.filter((row: any) => row.type === 'agent.session.turn.completed').map((row: any) => JSON.parse(row.payload).turn_id);
        assert.deepEqual(new Set(announcedTurns), new Set(turns.map((turn) => turn.id)), `session ${sessionId}: the outbox announced every completed turn`);
        assert.equal(rows.filter((row: any) => row.type === 'agent.session.created').length, 1, `session ${sessionId}: one session.created`);
      }
      assert.equal(expected.size, SESSIONS * 2, 'a created and a turn.completed per session');

      // Requests after the held ones were answered 200.
      const answered = () => new Set(receiver.at(path).slice(held.length).map((h) => String(h.headers['webhook-id'])));
      await receiver.waitFor('every committed event answered 200', () => [...expected.keys()].every((id) => answered().has(id)), DELIVERY_LEASE_MS + 20_000);
      const deliveredAt = Date.now();
      t.diagnostic(`every event delivered ${deliveredAt - killedAt} ms after the kill (lease ${DELIVERY_LEASE_MS} ms)`);

      // What the receiver got: only expected ids, each payload its header's id and signed, and per
      // session in yuxi.seq order (duplicates only of the same seq, never a later one first).
      const hooks = receiver.at(path);
      for (const hook of hooks) {
        const id = String(hook.headers['webhook-id']);
        assert.ok(expected.has(id), `an expected event: ${id} ${hook.json?.type}`);
        assert.equal(hook.json.id, id, 'the payload id is the webhook-id');
        assert.equal(Number(hook.json.yuxi.seq), expected.get(id)!.seq, `${id}: yuxi.seq is the outbox seq`);
        new Webhook(secret).verify(hook.body, headersOf(hook));
      }
      for (const sessionId of sessionIds) {
        const mine = hooks.filter((h) => h.json.data.session_id === sessionId);
        const seqs = mine.map((h) => Number(h.json.yuxi.seq));
        assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `session ${sessionId}: receipts in seq order: ${seqs.join(', ')}`);
        const firsts: string[] = [];
        for (const hook of mine) if (!firsts.includes(String(hook.headers['webhook-id']))) firsts.push(String(hook.headers['webhook-id']));
        assert.deepEqual(firsts, expectedBySession.get(sessionId), `session ${sessionId}: every announced event, once each after dedup, in order`);
      }

      // The held deliveries were attempted again, and not before their lease ran out.
      for (const id of held) {
        const receipts = hooks.filter((h) => h.headers['webhook-id'] === id);
        assert.ok(receipts.length >= 2, `the held event ${id} was received again`);
        const firstAt = receipts[0]!.at;
        assert.ok(receipts[1]!.at >= firstAt + DELIVERY_LEASE_MS - 1_000, `the held event ${id} came again ${receipts[1]!.at - firstAt} ms later, not before its lease (${DELIVERY_LEASE_MS} ms)`);
      }

      // The delivery log: every delivery succeeded; the held ones after more than one attempt.
      const log = await waitUntil(
        'the delivery log to show every delivery done',
        async () => {
          const res = await api.request(`${HOOKS}/${endpointId}/deliveries?limit=100`);
          return res.status === 200 && res.body.data.every((d: any) => d.status !== 'pending') ? res.body.data : null;
        },
        { timeoutMs: 10_000, intervalMs: 200 },
      );
      assert.deepEqual(new Set(log.map((d: any) => d.event_id)), new Set(expected.keys()), 'one delivery per announced event');
      assert.equal(log.length, expected.size, 'no delivery twice in the log');
      for (const delivery of log) {
        assert.equal(delivery.status, 'succeeded', `${delivery.event_type} ${delivery.event_id}: ${JSON.stringify(delivery)}`);
        const last = delivery.attempts[delivery.attempts.length - 1];
        assert.deepEqual([last?.attempt, last?.outcome, last?.status_code], [delivery.attempt_count, 'succeeded', 200], `the last attempt of ${delivery.event_id} succeeded`);
        if (held.includes(delivery.event_id)) assert.ok(delivery.attempt_count >= 2, `the killed attempt's delivery ${delivery.event_id} took ${delivery.attempt_count} attempts`);
      }
      t.diagnostic(`deliveries: ${log.map((d: any) => `${d.event_type.split('.').pop()}×${d.attempt_count}`).join(' ')}; ${hooks.length} requests received`);

      await assertInvariants(infra, sessionIds, (m) => t.diagnostic(m));
    } finally {
      holding = false;
      receiver.answer = () => ({ status: 200 });
      await cluster.stop();
    }
  });
});
