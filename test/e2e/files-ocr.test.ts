import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { putAgent } from '../support/agents.js';
import { pngBomb, scannedPdf, upload, uploadDraft } from '../support/files.js';
import { API, http, newKey } from '../support/http.js';
import { bootstrap, call, type Caller, newProductUser, signToken } from '../support/identity.js';
import { renderSentence, renderSentenceGrey, words } from '../support/images.js';
import { SseStream } from '../support/sse.js';

// OCR and thumbnails with their real parts (sharp, tesseract.js and its English model from
// node_modules, pdf.js) through the api and the worker: the builtin ocr_parse_file, and the
// product's private routes under /api/agent, which take user tokens and refuse every API key.

const SENTENCE = 'Pack my box with five dozen liquor jugs';
const BOMB_LIMIT = 40_000_000;

async function userToken(): Promise<Caller> {
  return { name: 'a signed-in user', token: await signToken() };
}

const parse = (caller: Caller, fileId: string) => call(caller, `/api/agent/files/${fileId}/parse`, { method: 'POST' });
const thumbnail = (caller: Caller, body: unknown) => call(caller, '/api/agent/images', { body });

describe('OCR: the ocr_parse_file builtin', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  /** One turn of an agent with ocr_parse_file calling it on the attached draft; the call's output item. */
  async function ocrTurn(fileId: string): Promise<any> {
    const { id } = await putAgent({ model: 'scripted:echo', tools: [{ type: 'builtin', name: 'ocr_parse_file' }] });
    const created = await http(`${API}/sessions`, {
      idempotencyKey: newKey('ocr'),
      body: { agent_id: id, input: `[[tool:ocr_parse_file {"file_id":"${fileId}"}]]`, yuxi: { attachment_file_ids: [fileId] } },
    });
    assert.equal(created.status, 201, created.text);
    const stream = await SseStream.open(created.body.id);
    streams.push(stream);
    const done = await stream.waitForType('agent.session.turn.completed', undefined, 60_000);
    const items = (await http(`${API}/sessions/${created.body.id}/turns/${done.data.turn_id}/items?order=asc&limit=100`)).body.data;
    return items.find((item: any) => item.type === 'function_call_output');
  }

  it('reads back the sentence of a PNG rendered now', async () => {
    const draft = await uploadDraft(await renderSentence(SENTENCE), 'sentence.png');
    const output = await ocrTurn(draft.id);
    assert.equal(output.yuxi.success, true, output.output);
    assert.equal(words(output.output), words(SENTENCE));
  });

  it('reads a scanned PDF page by OCR, and says so', async () => {
    const draft = await uploadDraft(scannedPdf(await renderSentenceGrey(SENTENCE)), 'scan.pdf');
    const output = await ocrTurn(draft.id);
    assert.equal(output.yuxi.success, true, output.output);
    assert.match(output.output, /^\[page 1, OCR\]\n/);
    assert.equal(words(output.output.replace(/^\[page 1, OCR\]\n/, '')), words(SENTENCE));
  });

  it('refuses an image bomb from its header: the model is told why', async () => {
    const draft = await uploadDraft(pngBomb(), 'bomb.png');
    const output = await ocrTurn(draft.id);
    assert.equal(output.yuxi.success, false);
    assert.match(output.output, /declares 20000 × 20000 pixels \(400 megapixels\), more than the 40 megapixels allowed/);
  });

  it('refuses an unknown builtin name at save, listing ocr_parse_file among the known ones', async () => {
    const res = await http('/api/v1/admin/agents/t-ocr-bad', { method: 'PUT', body: { name: 'bad', model: 'scripted:echo', tools: [{ type: 'builtin', name: 'ocr_parse' }] } });
    assert.equal(res.status, 422, res.text);
    assert.match(JSON.stringify(res.body.error.details), /ocr_parse_file/);
  });
});

describe('POST /api/agent/files/{file_id}/parse: manual OCR pre-parse, user tokens only', () => {
  it('returns the text of the user\'s draft image, page by page, marked as OCR', async () => {
    const user = await userToken();
    const draft = await uploadDraft(await renderSentence(SENTENCE), 'sentence.png', { token: user.token });
    const res = await parse(user, draft.id);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.object, 'file.parse');
    assert.equal(res.body.file_id, draft.id);
    assert.equal(res.body.mime_type, 'image/png');
    assert.equal(res.body.total_pages, 1);
    assert.equal(res.body.pages_not_recognised, 0);
    assert.equal(res.body.pages.length, 1);
    assert.equal(res.body.pages[0].page, 1);
    assert.equal(res.body.pages[0].source, 'ocr');
    assert.equal(words(res.body.pages[0].text), words(SENTENCE));
  });

  it('a text file and a scanned PDF: text as it is, the scan by OCR', async () => {
    const user = await userToken();
    const text = await uploadDraft('quarterly numbers\n', 'notes.txt', { token: user.token });
    const read = await parse(user, text.id);
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body.pages, [{ page: 1, text: 'quarterly numbers\n', source: 'text' }]);
    const scan = await uploadDraft(scannedPdf(await renderSentenceGrey(SENTENCE)), 'scan.pdf', { token: user.token });
    const scanned = await parse(user, scan.id);
    assert.equal(scanned.status, 200, scanned.text);
    assert.equal(scanned.body.pages[0].source, 'ocr');
    assert.equal(words(scanned.body.pages[0].text), words(SENTENCE));
  });

  it('runs at most FILE_WORK_PER_PRINCIPAL (2) parses of one caller at once: the others are 429 file_work_limited with Retry-After', async () => {
    const user = await userToken();
    const draft = await uploadDraft(await renderSentence(SENTENCE), 'sentence.png', { token: user.token });
    // Sent together: OCR takes far longer than the requests take to arrive, so all five overlap.
    const results = await Promise.all(Array.from({ length: 5 }, () => parse(user, draft.id)));
    const refused = results.filter((res) => res.status === 429);
    assert.ok(refused.length >= 1 && refused.length <= 3, results.map((res) => res.status).join(', '));
    assert.ok(results.every((res) => res.status === 200 || res.status === 429), results.map((res) => res.status).join(', '));
    for (const res of refused) {
      assert.equal(res.body.error.code, 'file_work_limited');
      assert.equal(res.body.error.details.limit, 2);
      assert.equal(res.headers.get('retry-after'), '2');
    }
    // The slots are free again once the requests are done (and each caller has slots of its own).
    const other = await userToken();
    const theirs = await uploadDraft('their notes\n', 'notes.txt', { token: other.token });
    assert.equal((await parse(other, theirs.id)).status, 200);
    const again = await parse(user, draft.id);
    assert.equal(again.status, 200, again.text);
  });

  it('refuses an image bomb within its limit: 422 image_too_large, from the header', async () => {
    const user = await userToken();
    const bomb = await uploadDraft(pngBomb(), 'bomb.png', { token: user.token });
    const res = await parse(user, bomb.id);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.error.code, 'image_too_large');
    assert.deepEqual(res.body.error.details, { width: 20_000, height: 20_000, limit_pixels: BOMB_LIMIT });
  });

  it('403 user_token_required for API keys: the owner\'s full key on its own draft and an administrator\'s key', async () => {
    const { caller } = await newProductUser('key holder');
    const draft = await uploadDraft('mine\n', 'mine.txt', { token: caller.token });
    for (const key of [caller, bootstrap]) {
      const res = await parse(key, draft.id);
      assert.equal(res.status, 403, `${key.name}: ${res.text}`);
      assert.equal(res.body.error.code, 'user_token_required');
      assert.equal(res.body.error.type, 'permission');
    }
    const none = await call(null, `/api/agent/files/${draft.id}/parse`, { method: 'POST' });
    assert.equal(none.status, 401);
  });

  it('404 for another user\'s draft and an unknown id; 409 once the draft is attached', async () => {
    const owner = await userToken();
    const draft = await uploadDraft('owned\n', 'owned.txt', { token: owner.token });
    const stranger = await parse(await userToken(), draft.id);
    assert.equal(stranger.status, 404, stranger.text);
    assert.equal(stranger.body.error.code, 'not_found');
    assert.equal((await parse(owner, '0'.repeat(32))).status, 404);
    assert.equal((await parse(owner, 'not-a-file-id')).status, 404);

    const session = await call(owner, `${API}/sessions`, { idempotencyKey: newKey('attach'), body: { agent_id: 'default-chatbot', input: 'keep it', yuxi: { attachment_file_ids: [draft.id] } } });
    assert.equal(session.status, 201, session.text);
    const attached = await parse(owner, draft.id);
    assert.equal(attached.status, 409, attached.text);
    assert.equal(attached.body.error.code, 'file_already_bound');
  });
});

describe('POST /api/agent/images: thumbnails, user tokens only', () => {
  it('a WebP thumbnail of the user\'s draft image within the box, as a data URL', async () => {
    const user = await userToken();
    const image = await uploadDraft(await renderSentence(SENTENCE, 'jpeg'), 'sentence.jpg', { token: user.token });
    const res = await thumbnail(user, { file_id: image.id, width: 200, height: 200 });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.object, 'image.thumbnail');
    assert.equal(res.body.file_id, image.id);
    assert.equal(res.body.mime_type, 'image/webp');
    assert.equal(res.body.width, 200);
    assert.ok(res.body.height > 0 && res.body.height < 200);
    const bytes = Buffer.from(res.body.data_url.replace(/^data:image\/webp;base64,/, ''), 'base64');
    assert.equal(bytes.length, res.body.bytes);
    assert.equal(bytes.subarray(8, 12).toString('latin1'), 'WEBP');
    const byDefault = await thumbnail(user, { file_id: image.id });
    assert.equal(byDefault.status, 200, byDefault.text);
    assert.equal(byDefault.body.width, 256);
  });

  it('refuses API keys (403), a bomb (422 image_too_large), a PDF (415), bad sizes (422), another user\'s image (404)', async () => {
    const user = await userToken();
    const { caller } = await newProductUser('key holder');
    const keyDraft = await uploadDraft(await renderSentence('key'), 'key.png', { token: caller.token });
    const byKey = await thumbnail(caller, { file_id: keyDraft.id });
    assert.equal(byKey.status, 403, byKey.text);
    assert.equal(byKey.body.error.code, 'user_token_required');

    const bomb = await uploadDraft(pngBomb(), 'bomb.png', { token: user.token });
    const refused = await thumbnail(user, { file_id: bomb.id });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'image_too_large');

    const pdf = await uploadDraft(scannedPdf(await renderSentenceGrey('pdf')), 'scan.pdf', { token: user.token });
    const notImage = await thumbnail(user, { file_id: pdf.id });
    assert.equal(notImage.status, 415, notImage.text);
    assert.equal(notImage.body.error.code, 'file_type_not_allowed');

    const image = await uploadDraft(await renderSentence('size'), 'size.png', { token: user.token });
    const bad = await thumbnail(user, { file_id: image.id, width: 0, height: 5000, extra: true });
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.body.error.code, 'validation_failed');
    assert.deepEqual(bad.body.error.details.fields.map((f: any) => f.field).sort(), ['extra', 'height', 'width']);
    const nulls = await thumbnail(user, { file_id: image.id, width: null });
    assert.equal(nulls.status, 422, nulls.text);

    const stranger = await thumbnail(await userToken(), { file_id: image.id });
    assert.equal(stranger.status, 404, stranger.text);
    assert.equal(stranger.body.error.code, 'not_found');
  });

  it('documents both routes, their codes and the new builtin in /openapi.json', async () => {
    const spec = (await http('/openapi.json', { key: null })).body;
    const parseOp = spec.paths['/api/agent/files/{file_id}/parse'].post;
    assert.equal(parseOp.operationId, 'parseDraftFile');
    for (const status of ['200', '403', '404', '409', '422']) assert.ok(parseOp.responses[status], `parse documents ${status}`);
    assert.ok(JSON.stringify(parseOp.responses['403']).includes('user_token_required'));
    assert.ok(JSON.stringify(parseOp.responses['422']).includes('image_too_large'));
    const imagesOp = spec.paths['/api/agent/images'].post;
    assert.equal(imagesOp.operationId, 'createImageThumbnail');
    for (const status of ['200', '403', '404', '415', '422']) assert.ok(imagesOp.responses[status], `images documents ${status}`);
    assert.ok(spec.components.schemas.ParsedFileDto.properties.pages_not_recognised);
    assert.ok(spec.components.schemas.ThumbnailDto.properties.data_url);
    assert.ok(spec.components.schemas.BuiltinToolDto.properties.name.enum.includes('ocr_parse_file'));
  });

  it('keeps an upload of the bomb itself small: the public upload takes it, under 5 MiB', async () => {
    const res = await upload(pngBomb(), 'bomb.png');
    assert.equal(res.status, 201, res.text);
    assert.ok(res.body.bytes < 5 * 1024 * 1024);
  });
});
