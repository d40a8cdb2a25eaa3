import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DomainError } from '#libs/errors';
import { approvalRequestId, parseApprovalRequestId } from '#libs/engine';
import { chosenMetadata } from '#libs/protocol';

// The upstream Agents API's names for what this API keeps elsewhere: top-level metadata, approval request ids.

describe('chosenMetadata', () => {
  it('takes the map from either place, or the same map from both', () => {
    assert.equal(chosenMetadata(undefined, undefined), undefined);
    assert.deepEqual(chosenMetadata({ a: '1' }, undefined), { a: '1' });
    assert.deepEqual(chosenMetadata(undefined, { a: '1' }), { a: '1' });
    assert.deepEqual(chosenMetadata({ a: '1', b: '2' }, { b: '2', a: '1' }), { a: '1', b: '2' });
  });

  it('refuses two different maps, naming metadata', () => {
    for (const [top, yuxi] of [[{ a: '1' }, { a: '2' }], [{ a: '1' }, { a: '1', b: '2' }], [{}, { a: '1' }], [{ a: '1' }, { b: '1' }]] as const) {
      assert.throws(
        () => chosenMetadata(top, yuxi),
        (error: unknown) => error instanceof DomainError && error.code === 'validation_failed' && JSON.stringify(error.details).includes('"metadata"'),
      );
    }
  });
});

describe('approval request ids', () => {
  it('name the turn, the waitpoint and the call, whatever the call id holds', () => {
    const id = approvalRequestId('turn-1', 'wp-1', 'call:with:colons');
    assert.deepEqual(parseApprovalRequestId(id), { turnId: 'turn-1', waitpointId: 'wp-1', callId: 'call:with:colons' });
  });

  it('are null when a part is missing or empty', () => {
    for (const id of ['', 'turn', 'turn:wp', ':wp:call', 'turn::call', 'turn:wp:']) assert.equal(parseApprovalRequestId(id), null, id);
  });
});
