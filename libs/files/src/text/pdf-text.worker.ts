// Runs in a worker thread (see pdf-text.ts): pdf.js parses a file the client chose, and a crafted
// PDF can take unbounded time or memory, which must not stall the worker process's event loop (its
// lease renewals, heartbeats and every other turn it runs).
import { parentPort } from 'node:worker_threads';
import { getDocumentProxy } from 'unpdf';

export interface PdfTextRequest {
  id: number;
  bytes: Uint8Array;
  maxPages: number;
  maxChars: number;
}
export type PdfTextReply = { ready: true } | { id: number; ok: true; pages: string[]; totalPages: number } | { id: number; ok: false; error: string };

/** The text layer of one page: its text items in order, a line break where pdf.js marks one. */
async function pageText(document: Awaited<ReturnType<typeof getDocumentProxy>>, pageNumber: number): Promise<string> {
  const page = await document.getPage(pageNumber);
  try {
    const content = await page.getTextContent();
    let text = '';
    for (const item of content.items) {
      if ('str' in item) text += item.hasEOL ? `${item.str}\n` : item.str;
    }
    return text;
  } finally {
    page.cleanup();
  }
}

/** Page by page, from the first, until `maxPages` pages or `maxChars` characters were read. */
async function extract({ bytes, maxPages, maxChars }: PdfTextRequest): Promise<{ pages: string[]; totalPages: number }> {
  // verbosity 0: errors only (pdf.js would print its warnings about a damaged file to the process's output).
  const document = await getDocumentProxy(bytes, { verbosity: 0 });
  try {
    const pages: string[] = [];
    let chars = 0;
    for (let pageNumber = 1; pageNumber <= Math.min(document.numPages, maxPages) && chars < maxChars; pageNumber++) {
      const text = await pageText(document, pageNumber);
      pages.push(text);
      chars += text.length;
    }
    return { pages, totalPages: document.numPages };
  } finally {
    await document.destroy();
  }
}

const port = parentPort;
if (port) {
  port.on('message', (request: PdfTextRequest) => {
    extract(request).then(
      ({ pages, totalPages }) => port.postMessage({ id: request.id, ok: true, pages, totalPages } satisfies PdfTextReply),
      (error: unknown) => port.postMessage({ id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) } satisfies PdfTextReply),
    );
  });
  port.postMessage({ ready: true } satisfies PdfTextReply);
}
