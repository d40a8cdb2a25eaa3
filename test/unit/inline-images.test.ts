import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkInlineImage, isStorageKey, type ResolveSessionImages, storageKeys } from '#libs/files';
import { ImageReferences, MISSING_IMAGE_TEXT, toModelMessages } from '#libs/runtime';
import type { ItemEntity, StoredContentPart } from '#libs/engine';
import { PNG } from '../support/file-fixtures.js';

// Inline images without a stack: the type check of a data URL's bytes, storage keys, and how the
// worker turns image references (and old data URLs) into what the model receives. A submission's
// images against the total limit (bodies of over a hundred megabytes): test/components.

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const FILE = '0123456789abcdef0123456789abcdef';
const PNG_URL = `data:image/png;base64,${PNG.toString('base64')}`;
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0'), Buffer.alloc(64)]);

function userItem(content: StoredContentPart[]): ItemEntity {
  return { id: 'i', sessionId: SESSION, turnId: 't', runId: 'r', inputId: null, seq: '1', type: 'message', role: 'user', status: 'completed', content, phase: null, tokens: null, createdAt: new Date(0) };
}

/** Answers with the data URLs it knows and records what it was asked. */
function fakeImages(known: Record<string, string>): { images: ResolveSessionImages; asked: string[][] } {
  const asked: string[][] = [];
  const images = {
    dataUrls: async (sessionIds: string[], ids: string[]) => {
      assert.deepEqual(sessionIds, [SESSION]);
      asked.push(ids);
      return new Map(ids.filter((id) => known[id]).map((id) => [id, known[id]!]));
    },
  } as unknown as ResolveSessionImages;
  return { images, asked };
}

describe('checkInlineImage', () => {
  it('accepts bytes of the declared type (jpg and jpeg both name JPEG)', async () => {
    assert.deepEqual(await checkInlineImage(PNG, 'png'), { ok: true, mimeType: 'image/png' });
    assert.deepEqual(await checkInlineImage(JPEG, 'jpeg'), { ok: true, mimeType: 'image/jpeg' });
    assert.deepEqual(await checkInlineImage(JPEG, 'jpg'), { ok: true, mimeType: 'image/jpeg' });
  });

  it('refuses other bytes, saying what they are', async () => {
    const mismatch = await checkInlineImage(PNG, 'jpeg');
    assert.equal(mismatch.ok, false);
    assert.match(!mismatch.ok ? mismatch.message : '', /image\/png, not image\/jpeg/);
    const text = await checkInlineImage(Buffer.from('hello'), 'png');
    assert.equal(text.ok, false);
    assert.equal((await checkInlineImage(Buffer.alloc(0), 'png')).ok, false);
    assert.equal((await checkInlineImage(Buffer.from('%PDF-1.4\n'), 'gif')).ok, false);
  });
});

describe('inline image storage keys', () => {
  it('are server-made and pass the drivers\' key check', () => {
    assert.equal(storageKeys.inline(FILE), `inline/${FILE}`);
    assert.ok(isStorageKey(storageKeys.inline(FILE)));
    assert.throws(() => storageKeys.inline('../etc/passwd'));
    assert.equal(isStorageKey('inline/../drafts/x'), false);
  });
});

describe('image references in the model context', () => {
  it('resolves a reference to the image bytes and keeps the order of text and images', async () => {
    const { images, asked } = fakeImages({ [FILE]: PNG_URL });
    const items = [userItem([{ type: 'input_text', text: 'look' }, { type: 'input_image', file_id: FILE, image_url: `/api/v1/agents/sessions/${SESSION}/files/${FILE}/content` }, { type: 'input_text', text: 'ok?' }])];
    const messages = toModelMessages(await new ImageReferences(images).resolve(items));
    assert.deepEqual(asked, [[FILE]]);
    assert.deepEqual(messages, [
      {
        role: 'user',
        text: 'look\nok?',
        parts: [
          { type: 'text', text: 'look' },
          { type: 'image', url: PNG_URL },
          { type: 'text', text: 'ok?' },
        ],
      },
    ]);
  });

  it('passes a data URL stored before images became files through, without a lookup', async () => {
    const { images, asked } = fakeImages({});
    const items = [userItem([{ type: 'input_text', text: 'old' }, { type: 'input_image', image_url: PNG_URL }])];
    const messages = toModelMessages(await new ImageReferences(images).resolve(items));
    assert.deepEqual(asked, [], 'nothing to load');
    assert.deepEqual(messages, [{ role: 'user', text: 'old', parts: [{ type: 'text', text: 'old' }, { type: 'image', url: PNG_URL }] }]);
  });

  it('tells the model when an image can no longer be loaded', async () => {
    const { images } = fakeImages({});
    const items = [userItem([{ type: 'input_image', file_id: FILE, image_url: `/api/v1/agents/sessions/${SESSION}/files/${FILE}/content` }])];
    const messages = toModelMessages(await new ImageReferences(images).resolve(items));
    assert.deepEqual(messages, [{ role: 'user', text: MISSING_IMAGE_TEXT }]);
  });

  it('looks images up in the sessions of the items that refer to them (a fork shows its ancestors\' items), and in no other', async () => {
    const ancestor = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb1';
    const bystander = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb2';
    const other = 'fedcba9876543210fedcba9876543210';
    const asked: [string[], string[]][] = [];
    const images = {
      dataUrls: async (sessionIds: string[], ids: string[]) => {
        asked.push([sessionIds, ids]);
        return new Map(ids.map((id) => [id, PNG_URL]));
      },
    } as unknown as ResolveSessionImages;
    const reference = (sessionId: string, file: string): ItemEntity => ({
      ...userItem([{ type: 'input_image', file_id: file, image_url: `/api/v1/agents/sessions/${sessionId}/files/${file}/content` }]),
      sessionId,
    });
    const items = [reference(ancestor, FILE), { ...userItem([{ type: 'input_text', text: 'no image' }]), sessionId: bystander }, reference(SESSION, other)];
    const messages = toModelMessages(await new ImageReferences(images).resolve(items));
    assert.deepEqual(asked, [[[ancestor, SESSION], [FILE, other]]], 'one lookup, scoped to the two sessions whose items name images');
    assert.equal(JSON.stringify(messages).split(PNG_URL).length - 1, 2, 'both images reach the model');
  });

  it('leaves text-only messages as plain text', () => {
    assert.deepEqual(toModelMessages([userItem([{ type: 'input_text', text: 'hi' }])]), [{ role: 'user', text: 'hi' }]);
  });
});
