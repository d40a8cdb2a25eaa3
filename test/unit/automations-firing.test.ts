import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deadPrincipal, decideOverlap, goneReason, previousIsActive, principalOf, scheduledKey, turnToCancel, type PreviousInvocation } from '../../libs/automations/src/firing/fire-decisions.js';
import { SESSION_WEBHOOK_TYPES, STANDALONE_WEBHOOK_TYPES, webhookPayloadOf } from '#libs/webhooks';

const previous = (inputStatus: string, turnStatus: string | null, turnId: string | null = turnStatus === null ? null : 'turn_1'): PreviousInvocation => ({ sessionId: 'sess_1', inputStatus, turnId, turnStatus });

describe('automation firing: the previous invocation\'s turn', () => {
  it('is active while its input waits in the queue or its turn has not ended', () => {
    assert.equal(previousIsActive(null), false, 'no earlier invocation accepted an input');
    assert.equal(previousIsActive(previous('pending', null)), true, 'queued, no turn yet');
    for (const status of ['queued', 'in_progress', 'requires_action']) assert.equal(previousIsActive(previous('consumed', status)), true, status);
    for (const status of ['completed', 'failed', 'cancelled']) assert.equal(previousIsActive(previous('consumed', status)), false, status);
    assert.equal(previousIsActive(previous('cancelled', null)), false, 'an input cancelled before it ran');
  });
});

describe('automation firing: overlap', () => {
  it('fires with no overlap reason when the previous turn is not active, whatever the policy', () => {
    for (const policy of ['skip', 'queue', 'cancel_previous'] as const) assert.deepEqual(decideOverlap(policy, false), { fire: true, reason: null, queuesBehind: false });
  });

  it('skip records the time skipped (pending_delivery), queue and cancel_previous fire behind the active turn', () => {
    assert.deepEqual(decideOverlap('skip', true), { fire: false, reason: 'overlap_skipped', skipReason: 'pending_delivery' });
    assert.deepEqual(decideOverlap('queue', true), { fire: true, reason: 'overlap_queued', queuesBehind: true });
    assert.deepEqual(decideOverlap('cancel_previous', true), { fire: true, reason: 'overlap_cancelled_previous', queuesBehind: true });
  });

  it('queue with a new_session target starts the new session at once, with the fire\'s own reason (nothing to queue behind)', () => {
    assert.deepEqual(decideOverlap('queue', true, { targetType: 'new_session', once: false }), { fire: true, reason: null, queuesBehind: false });
    assert.deepEqual(decideOverlap('queue', true, { targetType: 'existing_session', once: false }), { fire: true, reason: 'overlap_queued', queuesBehind: true });
    assert.deepEqual(decideOverlap('cancel_previous', true, { targetType: 'new_session', once: false }).reason, 'overlap_cancelled_previous');
  });

  it('a once automation is never skipped by overlap: skip queues it (it has no later time)', () => {
    assert.deepEqual(decideOverlap('skip', true, { targetType: 'existing_session', once: true }), { fire: true, reason: 'overlap_queued', queuesBehind: true });
    assert.deepEqual(decideOverlap('skip', true, { targetType: 'new_session', once: true }), { fire: true, reason: null, queuesBehind: false });
    assert.equal(decideOverlap('skip', true, { targetType: 'existing_session', once: false }).fire, false, 'a periodic one still skips');
  });

  it('cancel_previous cancels the previous invocation\'s turn only when it is active and is a turn', () => {
    assert.deepEqual(turnToCancel(previous('consumed', 'in_progress')), { sessionId: 'sess_1', turnId: 'turn_1' });
    assert.equal(turnToCancel(previous('consumed', 'completed')), null, 'ended: nothing to cancel');
    assert.equal(turnToCancel(previous('pending', null)), null, 'still queued: no turn of its own to cancel');
    assert.equal(turnToCancel(null), null);
  });
});

describe('automation firing: refusals', () => {
  const existing = { type: 'existing_session' as const, session_id: 's', instructions: 'go' };
  const fresh = { type: 'new_session' as const, agent_id: 'a', environment: { type: 'none' }, input: [], metadata: {} };

  const notFound = (what: string) => ({ code: 'not_found', message: `${what} not found` });

  it('a missing target pauses with what is gone; an owner suspended or dead credentials pause owner_unavailable', () => {
    assert.equal(goneReason(existing, notFound('Session s')), 'target_session_deleted');
    assert.equal(goneReason(fresh, notFound('Agent a')), 'agent_deleted');
    assert.equal(goneReason(existing, { code: 'user_suspended', message: '' }), 'owner_unavailable');
    assert.equal(goneReason(fresh, { code: 'user_suspended', message: '' }), 'owner_unavailable');
    assert.equal(goneReason(fresh, { code: 'unauthorized', message: '' }), 'owner_unavailable');
  });

  it('a new session\'s not_found that is not about its agent (an environment file gone) is a refusal, not agent_deleted', () => {
    assert.equal(goneReason(fresh, notFound('File file_1')), null);
    assert.equal(goneReason(fresh, notFound('Agent other')), null, 'another agent than the target\'s');
  });

  it('an input refused for what it is does not pause (the invocation fails, the automation stays active)', () => {
    for (const code of ['state_conflict', 'validation_failed', 'input_text_too_large', 'model_not_allowed']) {
      assert.equal(goneReason(existing, { code, message: 'x' }), null, code);
      assert.equal(goneReason(fresh, { code, message: 'x' }), null, code);
    }
  });

  it('the creator is dead to the fire when suspended, or when the creating key is revoked or expired', () => {
    assert.equal(deadPrincipal({ role: null, suspended: false, keyLive: true }), null);
    assert.equal(deadPrincipal({ role: null, suspended: true, keyLive: true })?.code, 'user_suspended');
    assert.equal(deadPrincipal({ role: 'admin', suspended: false, keyLive: false })?.code, 'unauthorized');
  });
});

describe('automation firing: identity and keys', () => {
  it('fires as the stored principal, without per-key limits', () => {
    const stored = { userId: 'u', actorId: 'a', keyId: 'k', access: 'full', appId: null, endUser: null, role: 'member', isAdmin: false };
    assert.deepEqual(principalOf(stored), { ...stored, limits: { perMinute: null, streams: null } });
  });

  it('fires with the creator\'s role as it is now: a demoted admin acts as a member, a promoted member as an admin', () => {
    const stored = { userId: 'u', actorId: 'a', keyId: 'k', access: 'full', appId: null, endUser: null, role: 'admin', isAdmin: true };
    assert.deepEqual({ role: principalOf(stored, { role: null }).role, isAdmin: principalOf(stored, { role: null }).isAdmin }, { role: null, isAdmin: false });
    assert.equal(principalOf({ ...stored, role: null, isAdmin: false }, { role: 'admin' }).isAdmin, true);
  });

  it('a scheduled time\'s key is the automation and the time in milliseconds (one fire per time, whoever fires it)', () => {
    assert.equal(scheduledKey('auto_1', new Date(Date.UTC(2026, 0, 1, 9, 0, 2))), `auto_1:${Date.UTC(2026, 0, 1, 9, 0, 2)}`);
    assert.notEqual(scheduledKey('auto_1', new Date(1_000)), scheduledKey('auto_1', new Date(2_000)));
  });
});

describe('automation webhooks', () => {
  it('are standalone deliveries: the session outbox never fans them out', () => {
    for (const type of ['agent.automation.invocation.failed', 'yuxi.automation.paused']) {
      assert.ok(STANDALONE_WEBHOOK_TYPES.has(type), type);
      assert.ok(!SESSION_WEBHOOK_TYPES.has(type), type);
      assert.equal(webhookPayloadOf({ type, event_id: 'evt_1', session_id: 'sess_1', created_at: 1 }, '$seq'), null, type);
    }
    assert.ok(SESSION_WEBHOOK_TYPES.has('agent.session.turn.completed'));
  });
});
