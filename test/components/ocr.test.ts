import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { checkImageHeader, FileParser, FileTextError, ImageTooLargeError, imageForOcr, MAX_IMAGE_PIXELS, OcrReader, PdfTextReader, thumbnail } from '#libs/files';
import { pdfWithText, pngBomb, scannedPdf } from '../support/file-fixtures.js';
import { renderSentence, renderSentenceGrey, words } from '../support/images.js';

// The OCR path with its real parts: sharp decodes, tesseract.js (its engine and English model
// from node_modules) recognises in the sandboxed thread, pdf.js gives a scanned page's image.
const SENTENCE = 'The quick brown fox jumps over the lazy dog';
const pdf = new PdfTextReader();
const ocr = new OcrReader();
const parser = new FileParser(pdf, ocr);
after(() => {
  pdf.close();
  ocr.close();
});

describe('FileParser: OCR for images and scanned PDF pages', () => {
  it('reads back the sentence of a rendered PNG', async () => {
    const parsed = await parser.parse(await renderSentence(SENTENCE), 'image/png');
    assert.equal(parsed?.pages.length, 1);
    assert.equal(parsed.pages[0]!.source, 'ocr');
    assert.equal(words(parsed.pages[0]!.text), words(SENTENCE));
  });

  it('reads a scanned PDF page by OCR and a text layer as it is', async () => {
    const scanned = await parser.parse(scannedPdf(await renderSentenceGrey(SENTENCE)), 'application/pdf');
    assert.deepEqual(
      scanned?.pages.map((page) => ({ source: page.source, text: words(page.text) })),
      [{ source: 'ocr', text: words(SENTENCE) }],
    );
    const text = await parser.parse(pdfWithText('Revenue grew 12 percent'), 'application/pdf');
    assert.deepEqual(text?.pages, [{ text: 'Revenue grew 12 percent', source: 'text' }]);
  });

  it('reads each page of a scan whose pages share one image', async () => {
    const parsed = await parser.parse(scannedPdf(await renderSentenceGrey(SENTENCE), 2), 'application/pdf');
    assert.deepEqual(
      parsed?.pages.map((page) => ({ source: page.source, text: words(page.text) })),
      [1, 2].map(() => ({ source: 'ocr', text: words(SENTENCE) })),
    );
  });

  it('refuses an image bomb from its header, before decoding', async () => {
    const bomb = pngBomb();
    await assert.rejects(checkImageHeader(bomb), (error: unknown) => error instanceof ImageTooLargeError && error.width === 20_000 && error.limitPixels === MAX_IMAGE_PIXELS);
    await assert.rejects(parser.parse(bomb, 'image/png'), ImageTooLargeError);
    await assert.rejects(thumbnail(bomb, 256, 256), ImageTooLargeError);
  });

  it('never decodes a PDF page image over the pixel limit: the page is left without text', async () => {
    // 8000 × 6000 = 48 megapixels of white, a few kilobytes compressed.
    const page = { width: 8000, height: 6000, grey: Buffer.alloc(8000 * 6000, 255) };
    const parsed = await parser.parse(scannedPdf(page), 'application/pdf');
    assert.deepEqual(parsed?.pages, [{ text: '', source: 'text' }]);
    assert.equal(parsed.pagesNotRecognised, 0);
  });

  it('makes a WebP thumbnail within the box, never enlarged', async () => {
    const image = await renderSentence(SENTENCE);
    const small = await thumbnail(image, 200, 200);
    assert.equal(small.width, 200);
    assert.ok(small.height < 200);
    assert.deepEqual(small.bytes.subarray(8, 12).toString('latin1'), 'WEBP');
    const same = await thumbnail(image, 4000, 4000);
    assert.equal(same.height, 120);
  });
});

describe('OcrReader: bounded, off the event loop', () => {
  it('gives up on an image that takes longer than its time limit, then reads the next in a fresh thread', async () => {
    // A time limit no recognition meets (it starts once the thread is up; the model loads within it):
    // it stands in for an image crafted to never finish.
    const hasty = new OcrReader({ timeoutMs: 1 });
    try {
      const png = await imageForOcr(await renderSentence(SENTENCE));
      for (let attempt = 0; attempt < 2; attempt++) {
        await assert.rejects(hasty.recognise(png), (error: unknown) => error instanceof FileTextError && /took longer than 1 ms/.test(error.message));
      }
    } finally {
      hasty.close();
    }
    assert.equal(words(await ocr.recognise(await imageForOcr(await renderSentence(SENTENCE)))), words(SENTENCE));
  });

  it('drops an image that waited too long behind another, unread, and one whose turn was cancelled', async () => {
    // A wait far below one recognition (a thread and the model load first): the second image is
    // answered "busy" while the first is still being read.
    const busy = new OcrReader({ queueWaitMs: 1 });
    try {
      const png = await imageForOcr(await renderSentence(SENTENCE));
      const first = busy.recognise(png);
      await assert.rejects(busy.recognise(png), (error: unknown) => error instanceof FileTextError && /busy with other images/.test(error.message));
      assert.equal(words(await first), words(SENTENCE));
      await assert.rejects(busy.recognise(png, AbortSignal.abort()), (error: unknown) => error instanceof FileTextError && /cancelled/.test(error.message));
    } finally {
      busy.close();
    }
  });
});
