import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AutomationRecord, type InvocationRecord, snapshotOfView, toAutomationDto, toAutomationSnapshot, toInvocationDto } from '#libs/automations';

// The public views of automations and invocations: the upstream shapes (periodic fields only on
// periodic automations, run_at only on once ones, Unix seconds, agent null and no vaults on a
// new-session target) with the yuxi extensions.

const CREATED = new Date('2026-03-01T10:00:00.500Z');
const NEXT = new Date('2026-03-02T09:00:00Z');

function record(overrides: Partial<AutomationRecord> = {}): AutomationRecord {
  return {
    id: '0193a5d0-4b2c-7d3e-8f4a-5b6c7d8e9f10',
    ownerId: '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e09',
    principal: { userId: 'u', actorId: 'u', keyId: null, access: 'full', appId: null, endUser: null, role: null, isAdmin: false },
    name: 'digest',
    type: 'periodic',
    expression: '0 9 * * *',
    timezone: 'Europe/Berlin',
    runAt: null,
    target: { type: 'new_session', agent_id: 'default-chatbot', environment: { type: 'none' }, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], metadata: {} },
    targetSessionId: null,
    agentId: 'default-chatbot',
    metadata: { team: 'ops' },
    overlap: 'skip',
    catchUp: 'latest',
    status: 'active',
    pauseReason: null,
    nextRunAt: NEXT,
    createdAt: CREATED,
    updatedAt: CREATED,
    ...overrides,
  };
}

describe('automation views', () => {
  it('shows a periodic automation with its expression and zone, a new-session target as upstream does, times in Unix seconds', () => {
    const view = toAutomationDto(record());
    assert.equal(view.object, 'agent.automation');
    assert.equal(view.expression, '0 9 * * *');
    assert.equal(view.timezone, 'Europe/Berlin');
    assert.equal('run_at' in view, false);
    assert.equal(view.created_at, 1772359200);
    assert.deepEqual(view.created_by, { type: 'developer' });
    assert.deepEqual(view.target, { type: 'new_session', agent: null, agent_id: 'default-chatbot', environment: { type: 'none' }, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], metadata: {}, vault_ids: [] });
    assert.deepEqual(view.yuxi, { overlap: 'skip', catch_up: 'latest', next_run_at: NEXT.getTime() / 1000 });
  });

  it('shows a once automation with run_at and no periodic fields; a paused one without a next time', () => {
    const view = toAutomationDto(record({ type: 'once', expression: null, timezone: null, runAt: NEXT, status: 'paused', nextRunAt: null, target: { type: 'existing_session', session_id: 's', instructions: 'go' } }));
    assert.equal(view.run_at, NEXT.getTime() / 1000);
    assert.equal('expression' in view || 'timezone' in view, false);
    assert.equal(view.status, 'paused');
    assert.equal(view.yuxi.next_run_at, null);
    assert.deepEqual(view.target, { type: 'existing_session', session_id: 's', instructions: 'go' });
  });

  it('shows a manual invocation without a scheduled time, a scheduled one with the automation it fired as', () => {
    const base: InvocationRecord = {
      id: 'v',
      automationId: 'a',
      ownerId: 'o',
      source: 'manual',
      scheduledAt: null,
      status: 'completed',
      skipReason: null,
      reason: 'manual',
      error: null,
      sessionId: 's',
      inputId: 'i',
      turnId: null,
      automationSnapshot: null,
      firedAt: CREATED,
      createdAt: CREATED,
    };
    const manual = toInvocationDto(base);
    assert.deepEqual(manual.source, { type: 'manual' });
    assert.equal(manual.scheduled_at, null);
    assert.deepEqual(manual.yuxi, { input_id: 'i', turn_id: null, reason: 'manual', fired_at: 1772359200 });
    const snapshot = toAutomationDto(record());
    const scheduled = toInvocationDto({ ...base, source: 'automation', scheduledAt: NEXT, reason: 'scheduled', automationSnapshot: snapshot, status: 'skipped', skipReason: 'pending_delivery' });
    assert.deepEqual(scheduled.source, { type: 'automation', automation: snapshot });
    assert.equal(scheduled.scheduled_at, NEXT.getTime() / 1000);
    assert.equal(scheduled.skip_reason, 'pending_delivery');
  });
});

describe('automation snapshot (an invocation\'s source.automation)', () => {
  it('is the resource without the target\'s input or instructions (kept on every fire, skipped ones too)', () => {
    const fresh = toAutomationSnapshot(record());
    assert.deepEqual(fresh.target, { type: 'new_session', agent: null, agent_id: 'default-chatbot', environment: { type: 'none' }, metadata: {}, vault_ids: [] });
    assert.equal(fresh.name, 'digest');
    const existing = toAutomationSnapshot(record({ target: { type: 'existing_session', session_id: 's', instructions: 'x'.repeat(1000) } }));
    assert.deepEqual(existing.target, { type: 'existing_session', session_id: 's' });
    assert.deepEqual(snapshotOfView(toAutomationDto(record())), fresh, 'the same from the resource\'s view');
  });
});
