import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gatherMetadataFilter, METADATA_LIMITS, metadataErrors, parseIfMatch } from '#libs/protocol';

// Pure logic of session metadata and revisions: bounds, the list filter's query shape, If-Match.

describe('metadataErrors', () => {
  it('accepts string maps within the bounds', () => {
    assert.deepEqual(metadataErrors({}), []);
    const full = Object.fromEntries(Array.from({ length: METADATA_LIMITS.maxKeys }, (_, i) => [`${i}`.padEnd(METADATA_LIMITS.maxKeyLength, 'k'), 'v'.repeat(METADATA_LIMITS.maxValueLength)]));
    assert.deepEqual(metadataErrors(full), []);
  });

  it('names each problem', () => {
    assert.deepEqual(metadataErrors(null), ['must be an object of string values']);
    assert.deepEqual(metadataErrors(['a']), ['must be an object of string values']);
    assert.deepEqual(metadataErrors('a'), ['must be an object of string values']);
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    assert.deepEqual(metadataErrors(tooMany), ['must have at most 16 keys (got 17)']);
    assert.deepEqual(metadataErrors({ ['k'.repeat(65)]: 'v' }), [`key "${'k'.repeat(65)}" must be 1–64 characters`]);
    assert.deepEqual(metadataErrors({ '': 'v' }), ['key "" must be 1–64 characters']);
    assert.deepEqual(metadataErrors({ n: 1 }), ['value of "n" must be a string']);
    assert.deepEqual(metadataErrors({ n: 'v'.repeat(513) }), ['value of "n" must be at most 512 characters']);
  });
});

describe('gatherMetadataFilter', () => {
  // The gathered map has no prototype; compared as plain JSON.
  const gathered = (query: Record<string, unknown>) => JSON.parse(JSON.stringify(gatherMetadataFilter(query)));

  it('gathers metadata[key] pairs into one object and keeps the other fields', () => {
    assert.deepEqual(gathered({ limit: '5', 'metadata[channel]': 'web', 'metadata[locale]': 'en' }), { limit: '5', metadata: { channel: 'web', locale: 'en' } });
  });

  it('leaves a query without pairs as it is, and keeps repeated values and malformed names for validation to refuse', () => {
    assert.deepEqual(gathered({ limit: '5' }), { limit: '5' });
    assert.deepEqual(gathered({ 'metadata[a]': ['1', '2'] }), { metadata: { a: ['1', '2'] } });
    assert.deepEqual(gathered({ 'metadata[a': '1', 'metadata[a][b]': '2' }), { 'metadata[a': '1', 'metadata[a][b]': '2' });
    assert.deepEqual(gathered({ 'metadata[]': 'x' }), { metadata: { '': 'x' } });
  });

  it('takes a key named __proto__ as a key (its repeated values still go to validation), never as the prototype', () => {
    const filter = gatherMetadataFilter({ 'metadata[__proto__]': ['1', '2'] }) as { metadata: Record<string, unknown> };
    assert.equal(Object.getPrototypeOf(filter.metadata), null);
    assert.deepEqual(Object.entries(filter.metadata), [['__proto__', ['1', '2']]]);
  });
});

describe('parseIfMatch', () => {
  it('reads the ETag, its weak form and the bare revision; absent or * is no condition', () => {
    assert.equal(parseIfMatch('"3"'), 3);
    assert.equal(parseIfMatch('W/"3"'), 3);
    assert.equal(parseIfMatch(' 12 '), 12);
    assert.equal(parseIfMatch(undefined), undefined);
    assert.equal(parseIfMatch('*'), undefined);
    assert.equal(parseIfMatch('"7"'), 7);
  });

  it('refuses what it cannot read (422 naming If-Match) rather than ignore a condition', () => {
    for (const value of ['', 'abc', '"3', '"3", "4"', '-1', '1.5', '"1234567890"']) {
      assert.throws(() => parseIfMatch(value), (error: any) => error.code === 'validation_failed' && error.details.fields[0].field === 'If-Match', value);
    }
  });
});
