import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extensionOf, isFileId, isPlainText, isStorageKey, newFileId, sanitizeFilename, sniffUpload, storageKeys } from '#libs/files';
import { PREPARATION_RETRY_MAX_MS, preparationRetryDelayMs } from '#libs/engine';
import { executableBytes, PNG, pdfWithText } from '../support/file-fixtures.js';

// Pure logic of the files lib: filename sanitising, type decisions from bytes, ids and storage keys.

describe('sanitizeFilename', () => {
  const cases: [string, string][] = [
    ['report.pdf', 'report.pdf'],
    ['../../etc/passwd', 'passwd'],
    ['..\\..\\windows\\system32\\evil.txt', 'evil.txt'],
    ['/absolute/path/notes.md', 'notes.md'],
    ['..', 'file'],
    ['../', 'file'],
    ['', 'file'],
    ['.htaccess', 'htaccess'],
    ['name. . .', 'name'],
    ['a\u0000b.txt', 'a_b.txt'],
    ['line\nbreak.txt', 'line_break.txt'],
    ['bidi\u202Etxt.exe', 'bidi_txt.exe'],
    ['what?<>|*:".csv', 'what_______.csv'],
    ['  spaced   out .txt ', 'spaced out .txt'],
    ['季度报告.pdf', '季度报告.pdf'],
    ['cafe\u0301.txt', 'café.txt'],
  ];
  for (const [raw, expected] of cases) {
    it(`${JSON.stringify(raw)} → ${JSON.stringify(expected)}`, () => assert.equal(sanitizeFilename(raw), expected));
  }

  it('cuts long names to 255 UTF-8 bytes, keeping the extension and whole characters', () => {
    const ascii = sanitizeFilename(`${'a'.repeat(400)}.json`);
    assert.equal(Buffer.byteLength(ascii), 255);
    assert.ok(ascii.endsWith('.json'));
    const cjk = sanitizeFilename(`${'报'.repeat(200)}.md`);
    assert.ok(Buffer.byteLength(cjk) <= 255);
    assert.ok(cjk.endsWith('.md'));
    assert.ok(!cjk.includes('\uFFFD'), 'no character cut in two');
    const emoji = sanitizeFilename(`${'😀'.repeat(100)}`);
    assert.ok(Buffer.byteLength(emoji) <= 255);
    assert.equal([...emoji].every((c) => c === '😀'), true, 'no surrogate pair cut in two');
  });

  it('never leaves a separator, a control character or a leading dot', () => {
    for (const raw of ['../../x', '..\\..\\y', '.\u0001.z', 'a/b\\c', '\u0007bell']) {
      const name = sanitizeFilename(raw);
      const control = [...name].some((c) => c.charCodeAt(0) < 0x20);
      assert.ok(!control && !name.includes('/') && !name.includes('\\') && !name.startsWith('.'), `${JSON.stringify(raw)} → ${JSON.stringify(name)}`);
    }
  });

  it('reads the extension after the last dot only', () => {
    assert.equal(extensionOf('a.tar.GZ'), 'gz');
    assert.equal(extensionOf('noext'), '');
    assert.equal(extensionOf('.hidden'), '');
  });
});

describe('sniffUpload', () => {
  const text = (s: string) => Buffer.from(s, 'utf8');

  it('accepts images and PDFs by their magic bytes, with a matching or no extension', async () => {
    assert.deepEqual(await sniffUpload(PNG, 'pixel.png'), { ok: true, mimeType: 'image/png' });
    assert.deepEqual(await sniffUpload(PNG, 'pixel'), { ok: true, mimeType: 'image/png' });
    assert.deepEqual(await sniffUpload(PNG, 'PIXEL.PNG'), { ok: true, mimeType: 'image/png' });
    assert.deepEqual(await sniffUpload(pdfWithText('hello'), 'report.pdf'), { ok: true, mimeType: 'application/pdf' });
  });

  it('accepts UTF-8 text kinds by extension, and JSON only when it parses', async () => {
    assert.deepEqual(await sniffUpload(text('plain words\n'), 'notes.txt'), { ok: true, mimeType: 'text/plain' });
    assert.deepEqual(await sniffUpload(text('# Title\n'), 'README.md'), { ok: true, mimeType: 'text/markdown' });
    assert.deepEqual(await sniffUpload(text('a,b\n1,2\n'), 'data.csv'), { ok: true, mimeType: 'text/csv' });
    assert.deepEqual(await sniffUpload(text('{"a":[1,2]}'), 'data.json'), { ok: true, mimeType: 'application/json' });
    assert.deepEqual(await sniffUpload(text('季度报告\t完成\r\n'), 'report'), { ok: true, mimeType: 'text/plain' });
    const json = await sniffUpload(text('{"a":'), 'broken.json');
    assert.equal(json.ok, false);
    assert.equal(!json.ok && json.reason, 'mismatch');
  });

  it('refuses executables whatever their name', async () => {
    for (const name of ['report.pdf', 'notes.txt', 'picture.png', 'program']) {
      const result = await sniffUpload(executableBytes(), name);
      assert.equal(result.ok, false, name);
      assert.equal(!result.ok && result.reason, 'not_allowed', name);
    }
    const windows = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00', 'latin1'), Buffer.alloc(200)]);
    const exe = await sniffUpload(windows, 'invoice.txt');
    assert.equal(!exe.ok && exe.reason, 'not_allowed');
  });

  it('refuses a known type under another kind\'s extension as a mismatch', async () => {
    const png = await sniffUpload(PNG, 'document.pdf');
    assert.equal(!png.ok && png.reason, 'mismatch');
    assert.equal(!png.ok && png.detected, 'image/png');
    const pngAsText = await sniffUpload(PNG, 'notes.txt');
    assert.equal(!pngAsText.ok && pngAsText.reason, 'mismatch');
    const textAsPng = await sniffUpload(text('not an image'), 'photo.png');
    assert.equal(!textAsPng.ok && textAsPng.reason, 'mismatch');
  });

  it('refuses binary content that is no accepted kind, and text under a non-text extension', async () => {
    const random = Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0xff, 0xfe, 0x80]);
    assert.equal((await sniffUpload(random, 'blob.txt')).ok, false);
    assert.equal((await sniffUpload(random, 'blob.png')).ok, false);
    const script = await sniffUpload(text('#!/bin/sh\nrm -rf /\n'), 'install.sh');
    assert.equal(!script.ok && script.reason, 'not_allowed');
    const html = await sniffUpload(text('<script>alert(1)</script>'), 'page.html');
    assert.equal(!html.ok && html.reason, 'not_allowed');
    const svg = await sniffUpload(text('<svg xmlns="http://www.w3.org/2000/svg"><script/></svg>'), 'icon.svg');
    assert.equal(svg.ok, false);
  });

  it('treats control characters and invalid UTF-8 as binary', () => {
    assert.equal(isPlainText(Buffer.from('tab\tnewline\nok')), true);
    assert.equal(isPlainText(Buffer.from('nul\u0000inside')), false);
    assert.equal(isPlainText(Buffer.from([0xc3, 0x28])), false);
  });
});

describe('file ids and storage keys', () => {
  it('makes 32-hex, time-ordered, distinct ids', () => {
    const ids = Array.from({ length: 50 }, () => newFileId());
    assert.ok(ids.every(isFileId));
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort(), ids, 'later ids sort after earlier ones');
    assert.equal(isFileId('0123456789ABCDEF0123456789ABCDEF'), false);
    assert.equal(isFileId('0123456789abcdef0123456789abcde'), false);
  });

  it('builds keys only from ids, in the shapes the drivers accept', () => {
    const id = newFileId();
    const session = '01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9e';
    assert.equal(storageKeys.draft(id), `drafts/${id}`);
    assert.equal(storageKeys.session(session, id), `sessions/${session}/files/${id}`);
    assert.ok(isStorageKey(storageKeys.draft(id)));
    assert.ok(isStorageKey(storageKeys.session(session, id)));
    for (const bad of ['drafts/../x', `drafts/${id}/..`, `/drafts/${id}`, `drafts/${id}.pdf`, `sessions/${session}/files/../../${id}`]) assert.equal(isStorageKey(bad), false, bad);
    assert.throws(() => storageKeys.draft('x/../../y'));
  });
});

describe('preparationRetryDelayMs (the recovery sweep\'s backoff for attachment preparations)', () => {
  it('starts at the grace period and doubles with each try', () => {
    assert.deepEqual([0, 1, 2, 3, 4].map((attempts) => preparationRetryDelayMs(attempts, 5_000)), [5_000, 10_000, 20_000, 40_000, 80_000]);
  });

  it('waits at most PREPARATION_RETRY_MAX_MS, however many tries failed', () => {
    assert.equal(preparationRetryDelayMs(6, 5_000), PREPARATION_RETRY_MAX_MS);
    assert.equal(preparationRetryDelayMs(1_000_000, 5_000), PREPARATION_RETRY_MAX_MS);
    assert.equal(preparationRetryDelayMs(1_000_000, 1), PREPARATION_RETRY_MAX_MS);
  });

  it('never waits less than the grace period, even one above the cap', () => {
    assert.equal(preparationRetryDelayMs(0, 10 * 60_000), 10 * 60_000);
    assert.equal(preparationRetryDelayMs(5, 10 * 60_000), 10 * 60_000);
    assert.equal(preparationRetryDelayMs(-1, 1_000), 1_000);
  });
});
