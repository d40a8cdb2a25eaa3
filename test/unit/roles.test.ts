import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertAdmin, assertOperator, assertViewer, onBehalfOfOwner, type Principal, type Role } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { idPrefixRange } from '#libs/engine';

const OWNER = '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e09';

function principal(role: Role | null, overrides: Partial<Principal> = {}): Principal {
  return {
    userId: '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e10',
    actorId: '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e10',
    keyId: '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e11',
    access: 'full',
    appId: null,
    endUser: null,
    role,
    isAdmin: role === 'admin',
    limits: { perMinute: null, streams: null },
    ...overrides,
  };
}

function allowed(check: (p: Principal) => void, p: Principal): boolean {
  try {
    check(p);
    return true;
  } catch (error) {
    assert.ok(error instanceof DomainError && error.code === 'forbidden', String(error));
    return false;
  }
}

describe('roles', () => {
  it('admin does everything, operator reads and acts, viewer reads, no role nothing', () => {
    const table = (['admin', 'operator', 'viewer', null] as const).map((role) => [role, allowed(assertAdmin, principal(role)), allowed(assertOperator, principal(role)), allowed(assertViewer, principal(role))]);
    assert.deepEqual(table, [
      ['admin', true, true, true],
      ['operator', false, true, true],
      ['viewer', false, false, true],
      [null, false, false, false],
    ]);
  });

  it('a role is worth nothing through an agents key or an app-bound key', () => {
    assert.equal(allowed(assertViewer, principal('admin', { access: 'agents' })), false);
    assert.equal(allowed(assertOperator, principal('operator', { appId: 'crm' })), false);
  });

  it('onBehalfOfOwner: only an operator or administrator gets the owner\'s scope; the actor stays the operator', () => {
    const operator = principal('operator');
    const acting = onBehalfOfOwner(operator, OWNER);
    assert.deepEqual(
      { userId: acting.userId, actorId: acting.actorId, keyId: acting.keyId, operatorFor: acting.operatorFor },
      { userId: OWNER, actorId: operator.actorId, keyId: operator.keyId, operatorFor: { ownerId: OWNER } },
    );
    assert.throws(() => onBehalfOfOwner(principal('viewer'), OWNER), /operators and administrators/);
    assert.throws(() => onBehalfOfOwner(principal(null), OWNER), /operators and administrators/);
  });
});

describe('session id prefixes (the search\'s q)', () => {
  it('a prefix as written, any case, with dashes where a UUID has them', () => {
    assert.deepEqual(idPrefixRange('0193A5B0-0a'), ['0193a5b0-0a00-0000-0000-000000000000', '0193a5b0-0aff-ffff-ffff-ffffffffffff']);
    assert.deepEqual(idPrefixRange(OWNER), [OWNER, OWNER]);
    assert.deepEqual(idPrefixRange('0'), ['00000000-0000-0000-0000-000000000000', '0fffffff-ffff-ffff-ffff-ffffffffffff']);
  });

  it('anything else is not an id prefix (the title search still applies)', () => {
    for (const q of ['01-93', 'report', '0193a5b00a1b', `${OWNER}0`, '', '%']) assert.equal(idPrefixRange(q), null, q);
  });
});
