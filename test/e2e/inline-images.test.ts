import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { useFakeOpenAi } from '../support/fake-openai-suite.js';
import { PNG, randomPng } from '../support/files.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { call, newProductUser } from '../support/identity.js';
import { SseStream } from '../support/sse.js';
import { type ImageFormat, renderSentence } from '../support/images.js';
import sharp from 'sharp';

// Inline images (input_image data URLs) are stored once as session files on acceptance; inputs,
// items and events refer to them by id and URL, so the event stream stays small; the model still
// gets the bytes. Real stack: api, worker, Postgres, Redis, local file storage, the fake OpenAI server.

const FIVE_MB = 5 * 1024 * 1024;
/** Every SSE message of a session with a 5 MB image stays far below this (the data URL alone is ~6.7 MB). */
const MAX_FRAME_BYTES = 64 * 1024;

const dataUrl = (bytes: Buffer, subtype = 'png'): string => `data:image/${subtype};base64,${bytes.toString('base64')}`;
const imageMessage = (text: string, ...images: Buffer[]) => [{ role: 'user', content: [{ type: 'input_text', text }, ...images.map((bytes) => ({ type: 'input_image', image_url: dataUrl(bytes) }))] }];
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** How many stored inline-image blobs hold exactly these bytes (local storage: STORAGE_DIR/inline/<file id>). */
async function storedCopies(bytes: Buffer): Promise<number> {
  const dir = path.join(env.storageDir, 'inline');
  const names = await readdir(dir).catch(() => [] as string[]);
  let copies = 0;
  for (const name of names.filter((n) => /^[0-9a-f]{32}$/.test(n))) {
    const stored = await readFile(path.join(dir, name)).catch(() => null);
    if (stored && stored.length === bytes.length && sha256(stored) === sha256(bytes)) copies += 1;
  }
  return copies;
}

async function content(url: string, token = env.apiKey): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(`${env.apiUrl}${url}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

async function inputOf(sessionId: string, inputId: string): Promise<any> {
  const res = await http(`${API}/sessions/${sessionId}/inputs/${inputId}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

function assertReference(block: any, sessionId: string): string {
  assert.equal(block.type, 'input_image');
  assert.match(block.file_id, /^[0-9a-f]{32}$/);
  assert.equal(block.image_url, `${API}/sessions/${sessionId}/files/${block.file_id}/content`);
  return block.file_id;
}

describe('inline images as session files', () => {
  const openAi = useFakeOpenAi();
  const open = (sessionId: string, lastEventId?: string): Promise<SseStream> => openAi.open(sessionId, lastEventId);

  it('a session with a 5 MB inline image streams and resumes normally, and every event stays small', async () => {
    const image = randomPng(FIVE_MB);
    assert.ok(image.length >= FIVE_MB);
    const session = await createSessionWith('default-chatbot', imageMessage('what is in this picture?', image));
    const inputId = session.yuxi.receipt.input_id;

    const stream = await open(session.id);
    const completed = await stream.waitFor((e) => e.type === 'agent.session.turn.completed', 30_000);
    assert.equal(completed.data.turn.status, 'completed');
    for (const event of stream.events) assert.ok(event.bytes < MAX_FRAME_BYTES, `${event.type} is ${event.bytes} bytes`);
    assert.ok(
      stream.events.every((e) => !JSON.stringify(e.data).includes('data:image/')),
      'no event carries the data URL',
    );

    // The user item refers to the stored image, in the events and in the history.
    const added = stream.events.find((e) => e.type === 'agent.session.turn.item.added' && e.data.item.role === 'user');
    assert.ok(added, 'the user item was announced');
    const fileId = assertReference(added.data.item.content[1], session.id);
    const done = stream.events.find((e) => e.type === 'agent.session.turn.item.done' && e.data.item.role === 'user');
    assert.deepEqual(done?.data.item.content[1], added.data.item.content[1]);
    const items = await http(`${API}/sessions/${session.id}/items?order=asc`);
    const userItem = items.body.data.find((i: any) => i.role === 'user');
    assert.deepEqual(userItem.content, [{ type: 'input_text', text: 'what is in this picture?' }, added.data.item.content[1]]);
    assert.equal(assertReference((await inputOf(session.id, inputId)).messages[0].content[1], session.id), fileId);
    const fetched = await content(added.data.item.content[1].image_url);
    assert.equal(fetched.status, 200);
    assert.ok(fetched.bytes.equals(image), 'the URL serves the image');

    // A reconnect with Last-Event-ID resumes strictly after the cursor, up to the completed turn.
    const expected = stream.events.slice(stream.events.indexOf(added) + 1, stream.events.indexOf(completed) + 1).map((e) => e.id);
    const resumed = await open(session.id, added.id);
    await resumed.waitFor((e) => e.type === 'agent.session.turn.completed', 15_000);
    assert.deepEqual(
      resumed.events.slice(0, expected.length).map((e) => e.id),
      expected,
      'the resumed stream continues right after the cursor, without a gap or duplicate',
    );
    for (const event of resumed.events) assert.ok(event.bytes < MAX_FRAME_BYTES, `${event.type} is ${event.bytes} bytes`);
  });

  it('serves the stored bytes to the session owner only, with their type and caching headers', async () => {
    const session = await createSessionWith('default-chatbot', imageMessage('a pixel', PNG));
    const input = await inputOf(session.id, session.yuxi.receipt.input_id);
    const block = input.messages[0].content[1];
    const fileId = assertReference(block, session.id);
    // An inline image is no attachment and no draft.
    assert.deepEqual([input.attachment_file_ids, input.attachments, input.attachment_status], [[], [], 'ready']);
    assert.equal((await http(`${API}/files/${fileId}`)).status, 404);
    assert.equal((await http(`${API}/files/${fileId}`, { method: 'DELETE' })).status, 404);

    const owner = await content(block.image_url);
    assert.equal(owner.status, 200);
    assert.ok(owner.bytes.equals(PNG), 'exactly the bytes that were sent');
    assert.equal(owner.headers.get('content-type'), 'image/png');
    assert.equal(owner.headers.get('content-length'), String(PNG.length));
    assert.equal(owner.headers.get('cache-control'), 'no-store');
    assert.equal(owner.headers.get('x-content-type-options'), 'nosniff');

    const stranger = await newProductUser('another user');
    const foreign = await call(stranger.caller, block.image_url);
    assert.equal(foreign.status, 404, 'another principal does not see the session\'s files');
    assert.equal(foreign.body.error.code, 'not_found');

    const other = await createSessionWith('default-chatbot', 'another session of the same owner');
    const elsewhere = await http(`${API}/sessions/${other.id}/files/${fileId}/content`);
    assert.equal(elsewhere.status, 404, 'a file of another session is not found through this one');
    const unknown = await http(`${API}/sessions/${session.id}/files/${'0'.repeat(32)}/content`);
    assert.equal(unknown.status, 404);
    const badIds = await http(`${API}/sessions/not-a-session/files/not-a-file/content`);
    assert.equal(badIds.status, 404);
    assert.equal(badIds.body.error.code, 'not_found');
  });

  it('the model receives the image bytes, in the order the user wrote them, on later calls too', async () => {
    const first = randomPng(64 * 1024);
    const second = randomPng(32 * 1024);
    const { id, model } = await putAgent({ instructions: 'Describe images.' });
    openAi.fake.script(fakeModel(model), [{ text: 'A noisy square.' }, { text: 'Another one.' }]);
    const session = await createSessionWith(id, imageMessage('look:', first));
    const stream = await open(session.id);
    const firstTurn = await stream.waitFor((e) => e.type === 'agent.session.turn.completed', 15_000);

    const [request] = openAi.fake.requests(fakeModel(model)) as any[];
    const user = request.messages[1];
    assert.equal(user.role, 'user');
    assert.equal(user.content[0].type, 'text');
    assert.equal(user.content[0].text, 'look:');
    assert.equal(user.content[1].type, 'image_url');
    assert.equal(user.content[1].image_url.url, dataUrl(first), 'the model request carries the image bytes as a data URL');

    const next = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: imageMessage('and this?', second) });
    assert.equal(next.status, 202, next.text);
    await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== firstTurn.data.turn_id, 15_000);
    const later = (openAi.fake.requests(fakeModel(model)) as any[])[1];
    const images = later.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content.find((p: any) => p.type === 'image_url')?.image_url.url);
    assert.deepEqual(images, [dataUrl(first), dataUrl(second)], 'the history keeps both images for the model');
  });

  it('stores the images of a message and of a steer as session files', async () => {
    const session = await createSessionWith('default-chatbot');
    for (const mode of ['follow_up', 'steer']) {
      const image = randomPng(16 * 1024);
      const res = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode }, input: imageMessage(`${mode} image`, image) });
      assert.equal(res.status, 202, res.text);
      const input = await inputOf(session.id, res.body.input_id);
      assert.equal(input.mode, mode);
      const block = input.messages[0].content[1];
      assertReference(block, session.id);
      assert.ok((await content(block.image_url)).bytes.equals(image));
      assert.equal(await storedCopies(image), 1);
    }
  });

  it('an idempotent replay stores no second copy: the same receipt, the same file', async () => {
    const image = randomPng(256 * 1024);
    const body = { agent_id: 'default-chatbot', input: imageMessage('once', image) };
    const key = newKey('create-image');
    const created = await http(`${API}/sessions`, { body, idempotencyKey: key });
    assert.equal(created.status, 201, created.text);
    const replayed = await http(`${API}/sessions`, { body, idempotencyKey: key });
    assert.equal(replayed.status, 201);
    assert.equal(replayed.text, created.text, 'the replay is the first response');
    const fileId = assertReference((await inputOf(created.body.id, created.body.yuxi.receipt.input_id)).messages[0].content[1], created.body.id);
    assert.equal(await storedCopies(image), 1);
    // The image is part of the intent: another image under the key is a conflict, and nothing of it is stored.
    const different = randomPng(64 * 1024);
    const conflict = await http(`${API}/sessions`, { body: { ...body, input: imageMessage('once', different) }, idempotencyKey: key });
    assert.equal(conflict.status, 409, conflict.text);
    assert.equal(conflict.body.error.code, 'idempotency_conflict');
    assert.equal(await storedCopies(different), 0);

    // Concurrent duplicates of a message: one input, one file, whichever request won.
    const other = randomPng(128 * 1024);
    const event = { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: imageMessage('twice at once', other) };
    const messageKey = newKey('msg-image');
    const [a, b] = await Promise.all([postEvent(created.body.id, event, messageKey), postEvent(created.body.id, event, messageKey)]);
    assert.equal(a.status, 202, a.text);
    assert.equal(b.text, a.text, 'both answers are the one receipt');
    const third = await postEvent(created.body.id, event, messageKey);
    assert.equal(third.text, a.text);
    const block = (await inputOf(created.body.id, a.body.input_id)).messages[0].content[1];
    assertReference(block, created.body.id);
    assert.notEqual(block.file_id, fileId);
    assert.equal(await storedCopies(other), 1, 'one stored copy after three submissions');
    const receipt = await http(`${API}/sessions/${created.body.id}/receipt?idempotency_key=${messageKey}`);
    assert.equal(receipt.body.input_id, a.body.input_id);
  });

  it('documents the content endpoint and the reference shape in /openapi.json', async () => {
    const spec = (await http('/openapi.json', { key: null })).body;
    const operation = spec.paths['/api/v1/agents/sessions/{session_id}/files/{file_id}/content'].get;
    assert.equal(operation.operationId, 'getSessionFileContent');
    assert.deepEqual(operation.tags, ['files']);
    assert.ok(operation.description.length > 0);
    assert.deepEqual(operation.responses['200'].content['image/png'].schema, { type: 'string', format: 'binary' });
    assert.ok(operation.responses['404'], 'not found is documented');
    assert.ok(spec.components.schemas.ContentPartDto.properties.file_id, 'items document file_id');
    assert.ok(spec.components.schemas.InputContentBlockDto.properties.file_id, 'inputs document file_id');
  });

  it('refuses a data URL whose bytes are not the declared image type with 422, storing nothing', async () => {
    const text = Buffer.from(`not an image ${newKey()}`);
    const key = newKey('create-bad-image');
    const refused = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', input: imageMessage('bad', text) }, idempotencyKey: key });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'validation_failed');
    assert.equal(refused.body.error.details.fields[0].field, 'input[0].content[1].image_url');
    assert.match(refused.body.error.details.fields[0].errors[0], /not image\/png/);
    assert.equal(await storedCopies(text), 0);
    // Nothing was kept under the key: the same key with another intent is no conflict.
    const fine = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', input: 'no image' }, idempotencyKey: key });
    assert.equal(fine.status, 201, fine.text);

    // A real image declared as another type, on a message: 422, the queue is untouched.
    const session = await createSessionWith('default-chatbot');
    const jpegDeclared = [{ role: 'user', content: [{ type: 'input_image', image_url: dataUrl(PNG, 'jpeg') }] }];
    const mismatch = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: jpegDeclared });
    assert.equal(mismatch.status, 422, mismatch.text);
    assert.equal(mismatch.body.error.details.fields[0].field, 'events[0].input[0].content[0].image_url');
    assert.match(mismatch.body.error.details.fields[0].errors[0], /image\/png, not image\/jpeg/);
    const queue = await http(`${API}/sessions/${session.id}/queue`);
    assert.equal(queue.status, 200);
    assert.deepEqual(queue.body.data, [], 'nothing was queued');
  });

  it('accepts PNG, JPEG, GIF and WebP (what OpenAI and Anthropic read), each stored and served with its type', async () => {
    const session = await createSessionWith('default-chatbot');
    const formats: [ImageFormat, string, string][] = [
      ['png', 'png', 'image/png'],
      ['jpeg', 'jpeg', 'image/jpeg'],
      ['jpeg', 'jpg', 'image/jpeg'],
      ['gif', 'gif', 'image/gif'],
      ['webp', 'webp', 'image/webp'],
    ];
    for (const [format, subtype, mimeType] of formats) {
      const bytes = await renderSentence(`an inline ${subtype} ${newKey()}`, format);
      const input = [{ role: 'user', content: [{ type: 'input_text', text: subtype }, { type: 'input_image', image_url: dataUrl(bytes, subtype) }] }];
      const res = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input });
      assert.equal(res.status, 202, `${subtype}: ${res.text}`);
      const block = (await inputOf(session.id, res.body.input_id)).messages[0].content[1];
      assertReference(block, session.id);
      const served = await content(block.image_url);
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('content-type'), mimeType, subtype);
      assert.ok(served.bytes.equals(bytes), `${subtype}: the bytes as sent`);
    }
  });

  it('refuses AVIF, TIFF and SVG inline images with 422 naming the type and the accepted ones', async () => {
    const session = await createSessionWith('default-chatbot');
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>');
    const refused: [string, Buffer][] = [
      ['avif', await sharp(await renderSentence('avif')).avif().toBuffer()],
      ['tiff', await sharp(await renderSentence('tiff')).tiff().toBuffer()],
      ['svg+xml', svg],
    ];
    for (const [subtype, bytes] of refused) {
      const input = [{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/${subtype};base64,${bytes.toString('base64')}` }] }];
      const res = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input });
      assert.equal(res.status, 422, `${subtype}: ${res.text}`);
      assert.equal(res.body.error.code, 'validation_failed');
      assert.equal(res.body.error.details.fields[0].field, 'events[0].input');
      assert.match(res.body.error.details.fields[0].errors[0], new RegExp(`content\\[0\\]\\.image_url is image/${subtype.replace('+', '\\+')}, which is not accepted: inline images are png, jpeg \\(jpg\\), gif or webp`));
    }
    // A PNG declared as png but holding TIFF bytes is refused by its bytes, as before.
    const tiffAsPng = await sharp(await renderSentence('tiff')).tiff().toBuffer();
    const mismatch = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: [{ role: 'user', content: [{ type: 'input_image', image_url: dataUrl(tiffAsPng) }] }] });
    assert.equal(mismatch.status, 422, mismatch.text);
    assert.deepEqual((await http(`${API}/sessions/${session.id}/queue`)).body.data, [], 'nothing was queued');
  });
});
