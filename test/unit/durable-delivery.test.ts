import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { durableDelivery } from '../support/durable-delivery.js';

// The fault suite's reading of a subscriber's events against the outbox (test/faults/steps.ts).
const outbox = [1, 2, 3, 4, 5, 6].map((seq) => ({ seq, eventId: `evt_${seq}` }));
const durable = (seq: number) => ({ type: 'agent.session.turn.item.done', data: { event_id: `evt_${seq}` } });
const resync = { type: 'yuxi.session.resync', data: { event_id: 'evt_resync' } };
const delta = { type: 'agent.session.turn.output_text.delta', data: { event_id: 'evt_live' } };

describe('durable delivery against the outbox', () => {
  it('every event once, in order, deltas between: nothing to report', () => {
    assert.deepEqual(durableDelivery(outbox, [durable(1), delta, durable(2), durable(3), durable(4), delta, durable(5), durable(6)]), {
      missing: 0,
      covered: [],
      uncovered: [],
      duplicates: [],
      outOfOrder: [],
    });
  });

  it('a resync covers the gap right after it, and only that one', () => {
    const verdict = durableDelivery(outbox, [durable(1), resync, delta, durable(3), durable(4), durable(6)]);
    assert.deepEqual(verdict.covered, ['2..2']);
    assert.deepEqual(verdict.uncovered, ['5..5'], 'the earlier resync does not excuse a later loss');
    assert.equal(verdict.missing, 2);
  });

  it('a resync after the gap does not cover it; a missing first event is a gap too', () => {
    assert.deepEqual(durableDelivery(outbox, [durable(2), durable(3), durable(5), resync, durable(6)]).uncovered, ['1..1', '4..4']);
    assert.deepEqual(durableDelivery(outbox, [resync, durable(2), durable(3), durable(4), durable(5), durable(6)]).covered, ['1..1']);
  });

  it('reports an event delivered twice or after a later one, resync or not', () => {
    const verdict = durableDelivery(outbox, [durable(1), durable(2), resync, durable(2), durable(4), durable(3), durable(5), durable(6)]);
    assert.deepEqual(verdict.duplicates, [2]);
    assert.deepEqual(verdict.outOfOrder, [3]);
    assert.deepEqual(verdict.covered, ['3..3']);
  });
});
