import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type OutboxAppend, OutboxSubscribers, type PublicEvent } from '#libs/events';
import { WEBHOOK_FAN_OUT, webhookFanOut } from '#libs/webhooks';

// Webhooks subscribe to the session outbox: for a batch with events webhooks announce they add the
// deliveries to the append's own statement; the events lib knows no subscriber by name.

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';

function appendOf(events: PublicEvent[]): OutboxAppend & { values: unknown[] } {
  const values: unknown[] = [SESSION, null, false, '"__token__"'];
  return {
    values,
    sessionId: SESSION,
    events,
    seqToken: '__token__',
    seqTokenParam: '$4',
    sessionParam: '$1',
    rowsCte: 'ev_ins',
    param: (value) => {
      values.push(value);
      return `$${values.length}`;
    },
  };
}

function event(type: string, extra: object = {}): PublicEvent {
  return { type, event_id: `evt_${type}`, session_id: SESSION, created_at: 1, ...extra };
}

describe('webhook fan-out of the outbox', () => {
  it('adds nothing to a batch without an event webhooks announce', () => {
    const append = appendOf([event('agent.session.turn.item.added'), event('agent.session.turn.started')]);
    assert.equal(webhookFanOut(append), null);
    assert.equal(append.values.length, 4, 'no value added');
  });

  it('writes a delivery per announced event in the append\'s statement, its body numbered by the insert', () => {
    const append = appendOf([event('agent.session.turn.item.added'), event('agent.session.turn.completed', { turn_id: 't1' })]);
    const contribution = webhookFanOut(append);
    assert.ok(contribution);
    assert.deepEqual(append.values.slice(4, 5), ['evt_agent.session.turn.completed']);
    const body = JSON.parse(String(append.values[5])) as { id: string; type: string; data: { turn_id: string; status: string }; yuxi: { seq: string } };
    assert.deepEqual([body.id, body.type, body.data.turn_id, body.data.status, body.yuxi.seq], ['evt_agent.session.turn.completed', 'agent.session.turn.completed', 't1', 'completed', '__token__']);
    const sql = contribution.ctes.join('\n');
    assert.match(sql, /INSERT INTO webhook_deliveries/);
    assert.match(sql, /FROM ev_ins JOIN \(VALUES \(\$5, \$6::text\)\)/, 'reads the rows the append inserted');
    assert.match(sql, /replace\(h\.body, \$4, ev_ins\.seq::text\)/);
    assert.match(contribution.result, /FROM wh_fan/);
  });

  it('registers each subscriber once, under its name', () => {
    const subscribers = new OutboxSubscribers();
    const subscriber = { name: WEBHOOK_FAN_OUT, contribute: webhookFanOut };
    subscribers.register(subscriber);
    subscribers.register({ ...subscriber });
    assert.deepEqual(subscribers.all().map((s) => s.name), [WEBHOOK_FAN_OUT]);
  });
});
