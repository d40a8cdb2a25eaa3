import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { StoreInlineImages } from '#libs/files';
import { IdempotencyService } from '#libs/engine';
import { InlineImages, MAX_IMAGE_BYTES_TOTAL, parseAgentInput } from '#libs/protocol';
import { PNG, randomPng } from '../support/file-fixtures.js';

// A submission's inline images, parsed once and hashed by their bytes, against the total limit: a
// component test, since it parses bodies of over a hundred megabytes of base64 (seconds of CPU).
// The pure rules of inline images are test/unit/inline-images.test.ts.

const PNG_URL = `data:image/png;base64,${PNG.toString('base64')}`;

describe('inline images in a submission: parsed once, hashed by their bytes', () => {
  const message = (...urls: string[]) => [{ role: 'user', content: [{ type: 'input_text', text: 'look' }, ...urls.map((url) => ({ type: 'input_image', image_url: url }))] }];
  // decode() and intentMessages() never store anything; the store is only used when staging.
  const inlineImages = new InlineImages({} as StoreInlineImages);
  const intentOf = async (raw: unknown) => IdempotencyService.hashIntent((await inlineImages.decode({ ownerId: 'owner', sessionId: null }, parseAgentInput(raw).messages, 'input')).intentMessages());

  it('the validator and the use case share one parse of the same body', () => {
    const raw = message(PNG_URL);
    const first = parseAgentInput(raw);
    assert.deepEqual(first.errors, []);
    assert.equal(parseAgentInput(raw), first, 'the second reader gets the first parse');
    assert.notEqual(parseAgentInput(message(PNG_URL)), first, 'another body is parsed on its own');
  });

  it('counts the base64 characters without whitespace against the 72 MiB limit', () => {
    const images = (url: string) => [message(...Array.from({ length: 7 }, () => url)), message(...Array.from({ length: 7 }, () => url))].flat();
    // 14 images of 12 Mi base64 characters: 126 MiB decoded, over the limit ...
    const payload = 'A'.repeat(12 * 1024 * 1024);
    assert.ok((14 * payload.length * 3) / 4 > MAX_IMAGE_BYTES_TOTAL);
    assert.ok(parseAgentInput(images(`data:image/png;base64,${payload}`)).errors.includes('input images exceed 72 MiB in total'));
    // ... while as many characters, half of them line breaks, are 63 MiB decoded: under it.
    const wrapped = 'AA\n\n'.repeat(3 * 1024 * 1024);
    assert.equal(wrapped.length, payload.length);
    assert.ok((14 * (wrapped.length / 2) * 3) / 4 < MAX_IMAGE_BYTES_TOTAL);
    assert.deepEqual(parseAgentInput(images(`data:image/png;base64,${wrapped}`)).errors, []);
  });

  it('the idempotency intent holds each image\'s SHA-256, not its data URL: the same images hash the same, another image does not', async () => {
    const other = randomPng(1024);
    const otherUrl = `data:image/png;base64,${other.toString('base64')}`;
    const batch = await inlineImages.decode({ ownerId: 'owner', sessionId: null }, parseAgentInput(message(PNG_URL, otherUrl)).messages, 'input');
    const intent = JSON.stringify(batch.intentMessages());
    assert.ok(!intent.includes('base64'), 'no data URL in the intent');
    assert.deepEqual((batch.intentMessages() as any[])[0].content, [
      { type: 'input_text', text: 'look' },
      { type: 'input_image', image_type: 'png', image_sha256: createHash('sha256').update(PNG).digest('hex') },
      { type: 'input_image', image_type: 'png', image_sha256: createHash('sha256').update(other).digest('hex') },
    ]);
    assert.equal(await intentOf(message(PNG_URL, otherUrl)), await intentOf(message(PNG_URL, otherUrl)), 'the same request hashes the same');
    assert.notEqual(await intentOf(message(PNG_URL, otherUrl)), await intentOf(message(otherUrl, PNG_URL)), 'the order of the images counts');
    assert.notEqual(await intentOf(message(PNG_URL)), await intentOf(message(otherUrl)), 'another image is another intent');
  });
});
