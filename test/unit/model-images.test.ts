import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { AppConfig } from '#libs/config';
import { imageForModel } from '#libs/files';
import { IMAGE_TOKENS, imageTokens, type ModelMessage, modelImageSize, type ModelUserPart } from '#libs/models';
import { capRequestImages, dataUrlBytes, imageLeftOutText, imageTokenAdjustment, ModelImages } from '#libs/runtime';

// Images on their way to a model: OpenAI's tiling formula for their tokens, the size they are
// downscaled to, and the per-request byte cap (which images are left out, and what replaces them).

const url = (bytes: number): string => `data:image/png;base64,${Buffer.alloc(bytes, 7).toString('base64')}`;
const user = (...sizes: number[]): ModelMessage => ({ role: 'user', text: 'look', parts: [{ type: 'text', text: 'look' }, ...sizes.map((size) => ({ type: 'image' as const, url: url(size) }))] });

describe('image tokens by dimensions (high detail)', () => {
  it('follows OpenAI\'s worked examples: 85 + 170 per 512 px tile after fitting 2048 and shortest side 768', () => {
    assert.equal(imageTokens(1024, 1024), 765, '768×768: 4 tiles');
    assert.equal(imageTokens(1024, 1024), IMAGE_TOKENS, 'the flat estimate is a 1024×1024 image');
    assert.equal(imageTokens(2048, 4096), 1105, '→ 1024×2048 → 768×1536: 6 tiles');
    assert.equal(imageTokens(512, 512), 255, 'one tile, never enlarged');
    assert.equal(imageTokens(100, 100), 255, 'a small image is one tile');
    assert.equal(imageTokens(4096, 8192), 1105, 'the size does not grow the count past the scaled size');
    assert.equal(imageTokens(768, 2048), 85 + 170 * 2 * 4);
    assert.equal(imageTokens(513, 100), 85 + 170 * 2, 'a partial tile counts whole');
  });

  it('the scaled size: fit in 2048 × 2048, then the shortest side at most 768; never enlarged', () => {
    assert.deepEqual(modelImageSize(1024, 1024), { width: 768, height: 768 });
    assert.deepEqual(modelImageSize(4000, 3000), { width: 1024, height: 768 });
    assert.deepEqual(modelImageSize(600, 400), { width: 600, height: 400 });
    assert.deepEqual(modelImageSize(3000, 500), { width: 2048, height: 341 });
    assert.deepEqual(modelImageSize(700, 1900), { width: 700, height: 1900 });
  });
});

describe('downscaling before a model request', () => {
  it('an image larger than the provider looks at is re-encoded at its scaled size; a smaller one is untouched', async () => {
    const big = await sharp({ create: { width: 3000, height: 2000, channels: 3, background: '#3366cc' } }).png().toBuffer();
    const scaled = await imageForModel(big, 'image/png', modelImageSize);
    assert.ok(scaled?.downscaled);
    assert.deepEqual([scaled.width, scaled.height], [1152, 768]);
    const meta = await sharp(scaled.bytes).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 1152, 768]);

    const small = await sharp({ create: { width: 700, height: 500, channels: 3, background: '#cc6633' } }).jpeg().toBuffer();
    const kept = await imageForModel(small, 'image/jpeg', modelImageSize);
    assert.equal(kept?.downscaled, false);
    assert.equal(kept.bytes, small, 'the same bytes, not re-encoded');
    assert.deepEqual([kept.width, kept.height], [700, 500]);

    assert.equal(await imageForModel(Buffer.from('not an image'), 'image/png', modelImageSize), null);
  });

  it('ModelImages downscales and measures the images of a request and leaves text-only contexts as they are', async () => {
    const images = new ModelImages(new AppConfig({ DATABASE_URL: 'postgres://x', REDIS_URL: 'redis://x' }));
    const textOnly: ModelMessage[] = [{ role: 'user', text: 'hi' }];
    assert.equal(await images.prepare(textOnly), textOnly, 'the same array: nothing was done');
    const big = await sharp({ create: { width: 2500, height: 2500, channels: 3, background: '#000000' } }).png().toBuffer();
    const [message] = await images.prepare([{ role: 'user', text: 'x', parts: [{ type: 'image', url: `data:image/png;base64,${big.toString('base64')}` }] }]);
    const part = message?.role === 'user' ? message.parts?.[0] : undefined;
    assert.equal(part?.type, 'image');
    assert.deepEqual([part.width, part.height], [768, 768]);
    const sent = await sharp(Buffer.from(part.url.split(',')[1]!, 'base64')).metadata();
    assert.deepEqual([sent.width, sent.height], [768, 768]);
  });
});

describe('the image bytes of one request are capped', () => {
  it('counts a data URL\'s decoded bytes from its length', () => {
    for (const size of [0, 1, 2, 3, 1000, 1001]) assert.equal(dataUrlBytes(url(size)), size);
  });

  it('keeps the newest images within the cap and replaces every older one, from the first that does not fit, by a note', () => {
    const messages: ModelMessage[] = [user(400), { role: 'assistant', text: 'ok' }, user(300, 200), user(500)];
    const capped = capRequestImages(messages, 900);
    const shown = capped.map((m) => (m.role === 'user' ? m.parts!.map((p) => (p.type === 'image' ? dataUrlBytes(p.url) : p.text)) : m.role === 'assistant' ? m.text : ''));
    const note = imageLeftOutText(900);
    assert.deepEqual(shown, [['look', note], 'ok', ['look', note, 200], ['look', 500]], 'newest first: 500 and 200 fit, 300 does not, and the older 400 is cut too');
    assert.deepEqual(capRequestImages(messages, 10_000), messages, 'under the cap nothing changes');
    assert.deepEqual(
      capRequestImages([user(2000)], 1000).map((m) => (m.role === 'user' ? m.parts!.map((p) => p.type) : [])),
      [['text', 'text']],
      'an image larger than the cap alone is not sent either',
    );
  });
});

describe('the context counts the images sent by their size', () => {
  it('adjusts the flat per-image estimate to each measured image, and a left-out one to its note', () => {
    const withImages = (...parts: ModelUserPart[]): ModelMessage[] => [{ role: 'user', text: 'x', parts }];
    assert.equal(imageTokenAdjustment([{ role: 'user', text: 'no images' }]), 0);
    assert.equal(imageTokenAdjustment(withImages({ type: 'image', url: 'data:,', width: 1024, height: 1024 })), 0, 'a 1024×1024 image is the estimate');
    assert.equal(imageTokenAdjustment(withImages({ type: 'image', url: 'data:,', width: 768, height: 2048 })), 85 + 170 * 8 - IMAGE_TOKENS);
    assert.equal(imageTokenAdjustment(withImages({ type: 'image', url: 'data:,', width: 100, height: 100 })), 255 - IMAGE_TOKENS);
    assert.equal(imageTokenAdjustment(withImages({ type: 'image', url: 'data:,' })), 0, 'an unmeasured image stays estimated');
    assert.equal(imageTokenAdjustment(withImages({ type: 'text', text: imageLeftOutText(10) })), 25 - IMAGE_TOKENS);
  });
});
