import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { FileTextError, fileTextPages, PDF_MAX_PAGES, PdfTextReader } from '#libs/files';
import { listFiles, MAX_READ_CHARS, readFile, type WorkdirFile, type WorkdirFiles } from '#libs/tools';
import { PNG, pdfWithFlateContent, pdfWithPages, pdfWithText } from '../support/file-fixtures.js';

// The file tools' outputs over a workdir stub, and the text the files lib extracts from real bytes.
const ID = '0123456789abcdef0123456789abcdef';
const pdf = new PdfTextReader();
after(() => pdf.close());

function workdir(files: { file: WorkdirFile; bytes: Uint8Array }[], failing = false): WorkdirFiles {
  return {
    list: async (sessionId) => (sessionId === 's1' ? files.map((f) => f.file) : []),
    readText: async (sessionId, fileId) => {
      if (failing) throw Object.assign(new Error('store down'), { name: 'StorageUnavailableError' });
      const found = sessionId === 's1' ? files.find((f) => f.file.id === fileId) : undefined;
      if (!found) return null;
      const text = await fileTextPages(found.bytes, found.file.mimeType, pdf);
      return { file: found.file, pages: text?.pages ?? null, totalPages: text?.totalPages };
    },
    // ocr_parse_file is tested with its real parts in ocr.test.ts and end to end.
    parse: async () => null,
  };
}

const file = (mimeType: string, filename: string, id = ID): WorkdirFile => ({ id, filename, mimeType, bytes: 1, inputId: null });

describe('fileTextPages', () => {
  it('reads UTF-8 text (without a BOM) as one page, a PDF page by page, an image as no text', async () => {
    assert.deepEqual(await fileTextPages(Buffer.from('\uFEFF季度 report'), 'text/plain', pdf), { pages: ['季度 report'], totalPages: 1 });
    assert.deepEqual(await fileTextPages(Buffer.from('{"a":1}'), 'application/json', pdf), { pages: ['{"a":1}'], totalPages: 1 });
    assert.deepEqual(await fileTextPages(pdfWithText('Revenue grew 12 percent'), 'application/pdf', pdf), { pages: ['Revenue grew 12 percent'], totalPages: 1 });
    assert.equal(await fileTextPages(PNG, 'image/png', pdf), null);
  });
});

describe('PdfTextReader: bounded, off the event loop', () => {
  it(`reads the first ${PDF_MAX_PAGES} pages of a longer PDF and says how many it has`, async () => {
    const texts = Array.from({ length: PDF_MAX_PAGES + 10 }, (_, index) => `Page ${index + 1} text`);
    const read = await pdf.read(pdfWithPages(texts));
    assert.equal(read.totalPages, PDF_MAX_PAGES + 10);
    assert.deepEqual(read.pages, texts.slice(0, PDF_MAX_PAGES));
  });

  it('stops after the page that reaches the character budget', async () => {
    const small = new PdfTextReader({ maxChars: 25 });
    try {
      const read = await small.read(pdfWithPages(['twelve chars', 'twelve chars', 'twelve chars', 'never read']));
      assert.deepEqual(read, { pages: ['twelve chars', 'twelve chars', 'twelve chars'], totalPages: 4 });
    } finally {
      small.close();
    }
  });

  it('refuses a PDF whose compressed streams inflate past the budget, before pdf.js decodes them; reads the same text when it fits', async () => {
    const text = Buffer.from('BT /F1 18 Tf 72 720 Td (compressed hello) Tj ET\n');
    const bomb = pdfWithFlateContent(Buffer.concat([text, Buffer.alloc(16 * 1024 * 1024, 0x20)]));
    assert.ok(bomb.length < 64 * 1024, `${bomb.length} bytes`);
    const tight = new PdfTextReader({ maxInflatedBytes: 8 * 1024 * 1024 });
    try {
      await assert.rejects(tight.read(bomb), (error: Error) => error instanceof FileTextError && /inflate to more than 8 MiB/.test(error.message));
      assert.deepEqual(await tight.read(pdfWithFlateContent(text)), { pages: ['compressed hello'], totalPages: 1 });
    } finally {
      tight.close();
    }
    assert.deepEqual((await pdf.read(bomb)).pages, ['compressed hello'], 'within the default budget (256 MiB) the same file is read');
  });

  it('gives up on a PDF that takes longer than its time limit, and starts a fresh thread for the next file', async () => {
    // A time limit no real PDF meets (the limit starts once the thread is up): it stands in for a
    // file crafted to never finish.
    const hasty = new PdfTextReader({ timeoutMs: 1 });
    try {
      const long = pdfWithPages(Array.from({ length: PDF_MAX_PAGES }, (_, index) => `page ${index}`));
      for (let attempt = 0; attempt < 2; attempt++) {
        await assert.rejects(hasty.read(long), (error: unknown) => error instanceof FileTextError && /took longer than 1 ms/.test(error.message));
      }
    } finally {
      hasty.close();
    }
  });

  it('drops a read that waited too long behind another file, unread, and goes on with the next', async () => {
    // A wait limit far below the time one read takes (a thread has to start first): the second file
    // is answered "busy" while the first is still being read; the first and a later one are read.
    const busy = new PdfTextReader({ queueWaitMs: 1 });
    try {
      const first = busy.read(pdfWithPages(['first file']));
      await assert.rejects(busy.read(pdfWithPages(['second file'])), (error: unknown) => error instanceof FileTextError && /busy with other files/.test(error.message));
      assert.deepEqual((await first).pages, ['first file']);
      assert.deepEqual((await busy.read(pdfWithPages(['third file']))).pages, ['third file']);
    } finally {
      busy.close();
    }
  });

  it('drops a read whose turn was cancelled', async () => {
    const aborted = AbortSignal.abort();
    await assert.rejects(pdf.read(pdfWithPages(['never read']), aborted), (error: unknown) => error instanceof FileTextError && /cancelled/.test(error.message));
    assert.deepEqual((await pdf.read(pdfWithPages(['read after']))).pages, ['read after']);
  });

  it('answers an unparsable PDF with FileTextError', async () => {
    await assert.rejects(pdf.read(Buffer.from('%PDF-1.4\nnot really a pdf')), FileTextError);
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

  it('says when only the first pages of a PDF were read, and why a PDF could not be read', async () => {
    const texts = Array.from({ length: PDF_MAX_PAGES + 3 }, (_, index) => `Page ${index + 1}`);
    const long = await readFile(workdir([{ file: file('application/pdf', 'long.pdf'), bytes: pdfWithPages(texts) }]), 's1', ID);
    assert.ok(long.success);
    assert.ok(long.output.startsWith('[page 1]\nPage 1\n\n[page 2]\nPage 2'));
    assert.ok(long.output.includes(`[page ${PDF_MAX_PAGES}]\nPage ${PDF_MAX_PAGES}\n`));
    assert.ok(!long.output.includes(`[page ${PDF_MAX_PAGES + 1}]`));
    assert.match(long.output, new RegExp(`\\[3 more pages not read: read_file reads at most the first ${PDF_MAX_PAGES} pages of a PDF`));
    const broken = await readFile(workdir([{ file: file('application/pdf', 'broken.pdf'), bytes: Buffer.from('%PDF-1.4\nnot really a pdf') }]), 's1', ID);
    assert.equal(broken.success, false);
    assert.match(broken.output, new RegExp(`^read_file error: file ${ID}: the PDF could not be read \\(`));
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
