import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { knownMigrationNames, schemaVerdict } from '#libs/database';

const KNOWN = ['Initial1', 'Second2', 'Third3'];

describe('schemaVerdict: a process starts only on exactly this build\'s schema', () => {
  it('every known migration applied, nothing else: accepted', () => {
    assert.deepEqual(schemaVerdict(KNOWN, KNOWN, true), { ok: true });
  });

  it('a migration this build does not know: refused as newer, naming both versions', () => {
    const verdict = schemaVerdict([...KNOWN, 'Fourth4'], KNOWN, true);
    assert.equal(verdict.ok, false);
    assert.equal(!verdict.ok && verdict.reason, 'newer');
    assert.match(!verdict.ok ? verdict.message : '', /^database schema is at migration Fourth4, this build knows up to Third3 \(unknown to it: Fourth4\)/);
  });

  it('an unknown migration among known ones is still newer, whatever its place', () => {
    const verdict = schemaVerdict(['Initial1', 'Other9', 'Second2', 'Third3'], KNOWN, true);
    assert.equal(!verdict.ok && verdict.reason, 'newer');
  });

  it('known migrations not applied yet: refused, telling to migrate', () => {
    const verdict = schemaVerdict(['Initial1'], KNOWN, true);
    assert.equal(!verdict.ok && verdict.reason, 'behind');
    assert.match(!verdict.ok ? verdict.message : '', /this build needs Third3 \(not applied: Second2, Third3\): run the migrations/);
  });

  it('no migration recorded: empty, or not a known baseline when other tables exist', () => {
    const empty = schemaVerdict(null, KNOWN, false);
    assert.equal(!empty.ok && empty.reason, 'empty');
    const none = schemaVerdict([], KNOWN, false);
    assert.equal(!none.ok && none.reason, 'empty');
    const foreign = schemaVerdict(null, KNOWN, true);
    assert.equal(!foreign.ok && foreign.reason, 'unknown_baseline');
    assert.match(!foreign.ok ? foreign.message : '', /not a known baseline.*up to Third3/);
  });

  it('the names this build knows are its migrations\' recorded names, in apply order, each once', () => {
    const names = knownMigrationNames();
    assert.ok(names.length > 0);
    assert.equal(new Set(names).size, names.length);
    const stamps = names.map((name) => Number(/(\d{13})$/.exec(name)?.[1]));
    assert.deepEqual([...stamps].sort((a, b) => a - b), stamps, 'apply order is timestamp order');
  });
});
