import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { totalDeltas } from '#libs/protocol';

// Storage totals by deltas: what one session's usage row changes in its owner's totals ('' and its project's).

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

describe('storage totals deltas', () => {
  it('a first measurement adds the session to its owner\'s total and its project\'s; a project-less one to the owner\'s only', () => {
    assert.deepEqual(totalDeltas([{ before: null, after: { ownerId: A, projectId: 'p', bytes: 100, rows: 4 } }]), [
      { ownerId: A, projectId: '', bytes: 100, rows: 4, sessions: 1 },
      { ownerId: A, projectId: 'p', bytes: 100, rows: 4, sessions: 1 },
    ]);
    assert.deepEqual(totalDeltas([{ before: null, after: { ownerId: A, projectId: null, bytes: 7, rows: 1 } }]), [{ ownerId: A, projectId: '', bytes: 7, rows: 1, sessions: 1 }]);
  });

  it('a new measurement adds only what changed; the same figures change nothing', () => {
    const before = { ownerId: A, projectId: null, bytes: 100, rows: 4 };
    assert.deepEqual(totalDeltas([{ before, after: { ...before, bytes: 160, rows: 6 } }]), [{ ownerId: A, projectId: '', bytes: 60, rows: 2, sessions: 0 }]);
    assert.deepEqual(totalDeltas([{ before, after: { ...before } }]), []);
  });

  it('a deleted (or purged) session leaves its totals entirely', () => {
    assert.deepEqual(totalDeltas([{ before: { ownerId: A, projectId: 'p', bytes: 100, rows: 4 }, after: null }]), [
      { ownerId: A, projectId: '', bytes: -100, rows: -4, sessions: -1 },
      { ownerId: A, projectId: 'p', bytes: -100, rows: -4, sessions: -1 },
    ]);
    assert.deepEqual(totalDeltas([{ before: null, after: null }]), []);
  });

  it('a session moved between projects keeps its owner\'s \'\' total first in lock order, though that nets to zero', () => {
    assert.deepEqual(totalDeltas([{ before: { ownerId: A, projectId: 'q', bytes: 5, rows: 1 }, after: { ownerId: A, projectId: 'p', bytes: 5, rows: 1 } }]), [
      { ownerId: A, projectId: '', bytes: 0, rows: 0, sessions: 0 },
      { ownerId: A, projectId: 'p', bytes: 5, rows: 1, sessions: 1 },
      { ownerId: A, projectId: 'q', bytes: -5, rows: -1, sessions: -1 },
    ]);
  });

  it('many rows (a purge): summed per total, owners in order', () => {
    const deltas = totalDeltas([
      { before: { ownerId: B, projectId: null, bytes: 10, rows: 1 }, after: null },
      { before: { ownerId: A, projectId: null, bytes: 20, rows: 2 }, after: null },
      { before: { ownerId: B, projectId: null, bytes: 30, rows: 3 }, after: null },
    ]);
    assert.deepEqual(deltas, [
      { ownerId: A, projectId: '', bytes: -20, rows: -2, sessions: -1 },
      { ownerId: B, projectId: '', bytes: -40, rows: -4, sessions: -2 },
    ]);
  });
});
