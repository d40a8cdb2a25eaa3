import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileTextPages } from '#libs/files';
import { listFiles, MAX_READ_CHARS, readFile, type WorkdirFile, type WorkdirFiles } from '#libs/tools';
import { PNG, pdfWithText } from '../support/file-fixtures.js';

// The file tools' outputs over a workdir stub, and the text the files lib extracts from real bytes.
const ID = '0123456789abcdef0123456789abcdef';

function workdir(files: { file: WorkdirFile; bytes: Uint8Array }[], failing = false): WorkdirFiles {
  return {
    list: async (sessionId) => (sessionId === 's1' ? files.map((f) => f.file) : []),
    readText: async (sessionId, fileId) => {
      if (failing) throw Object.assign(new Error('store down'), { name: 'StorageUnavailableError' });
      const found = sessionId === 's1' ? files.find((f) => f.file.id === fileId) : undefined;
      return found ? { file: found.file, pages: await fileTextPages(found.bytes, found.file.mimeType) } : null;
    },
  };
}

const file = (mimeType: string, filename: string, id = ID): WorkdirFile => ({ id, filename, mimeType, bytes: 1, inputId: null });

describe('fileTextPages', () => {
  it('reads UTF-8 text (without a BOM) as one page, a PDF page by page, an image as no text', async () => {
    assert.deepEqual(await fileTextPages(Buffer.from('\uFEFF季度 report'), 'text/plain'), ['季度 report']);
    assert.deepEqual(await fileTextPages(Buffer.from('{"a":1}'), 'application/json'), ['{"a":1}']);
    assert.deepEqual(await fileTextPages(pdfWithText('Revenue grew 12 percent'), 'application/pdf'), ['Revenue grew 12 percent']);
    assert.equal(await fileTextPages(PNG, 'image/png'), null);
  });
});

describe('list_files and read_file', () => {
  it('lists the session\'s files and only them', async () => {
    const files = workdir([{ file: file('text/plain', 'a.txt'), bytes: Buffer.from('x') }]);
    assert.deepEqual(JSON.parse((await listFiles(files, 's1')).output), { files: [{ file_id: ID, filename: 'a.txt', mime_type: 'text/plain', bytes: 1 }] });
    assert.deepEqual(JSON.parse((await listFiles(files, 'other')).output), { files: [] });
  });

  it('reads text as is and a PDF with page labels', async () => {
    const pdfId = 'fedcba9876543210fedcba9876543210';
    const files = workdir([
      { file: file('text/markdown', 'notes.md'), bytes: Buffer.from('# Notes\nline two') },
      { file: file('application/pdf', 'report.pdf', pdfId), bytes: pdfWithText('Page one text') },
    ]);
    assert.deepEqual(await readFile(files, 's1', ID), { success: true, output: '# Notes\nline two' });
    assert.deepEqual(await readFile(files, 's1', pdfId), { success: true, output: '[page 1]\nPage one text' });
  });

  it('fails softly: another session\'s or an unknown file, an image, a store that is down, a long text cut', async () => {
    const files = workdir([{ file: file('image/png', 'pixel.png'), bytes: PNG }]);
    const image = await readFile(files, 's1', ID);
    assert.equal(image.success, false);
    assert.match(image.output, /image\/png, which has no text/);
    assert.equal((await readFile(files, 'other', ID)).success, false);
    assert.match((await readFile(files, 's1', 'ffffffffffffffffffffffffffffffff')).output, /has no file/);
    assert.match((await readFile(workdir([], true), 's1', ID)).output, /could not be read now \(StorageUnavailableError\)/);
    assert.equal((await readFile(files, 's1', 42)).success, false);
    const long = workdir([{ file: file('text/plain', 'long.txt'), bytes: Buffer.from('a'.repeat(MAX_READ_CHARS + 10)) }]);
    const cut = await readFile(long, 's1', ID);
    assert.ok(cut.success);
    assert.ok(cut.output.startsWith('a'.repeat(MAX_READ_CHARS)));
    assert.match(cut.output, /\[truncated: 10 more characters\]$/);
  });
});
