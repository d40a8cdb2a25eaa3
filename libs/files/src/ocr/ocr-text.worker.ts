// Runs in a worker thread (see ocr-text.ts): tesseract reads an image a client or a model chose,
// and recognising a crafted image can take unbounded time, which must not stall the event loop of
// the api or the worker process. tesseract.js starts its own thread below this one for the
// WebAssembly engine; terminating this thread (a timeout) ends that one with it.
import { createRequire } from 'node:module';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { createWorker, OEM, type Worker as TesseractWorker } from 'tesseract.js';

export interface OcrRequest {
  id: number;
  /** A PNG (see image-pixels.ts: decoded and checked in the parent). */
  png: Uint8Array;
}
export type OcrReply = { ready: true } | { id: number; ok: true; text: string } | { id: number; ok: false; error: string };

const require = createRequire(import.meta.url);
/**
 * The English model shipped by the @tesseract.js-data/eng npm package (`4.0.0_best_int`: the LSTM
 * model tesseract.js itself would fetch for OEM.LSTM_ONLY). A local path, and `cacheMethod: none`,
 * so nothing is downloaded from a CDN or written to disk at run time; the engine (tesseract.js-core)
 * is required from node_modules too.
 */
const LANG_PATH = path.join(path.dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');

let engine: Promise<TesseractWorker> | undefined;

/** Started on the first image only, then kept for the next ones (loading the model takes about a second). */
function tesseract(): Promise<TesseractWorker> {
  engine ??= createWorker('eng', OEM.LSTM_ONLY, { langPath: LANG_PATH, cacheMethod: 'none', gzip: true });
  engine.catch(() => (engine = undefined));
  return engine;
}

async function recognise(png: Uint8Array): Promise<string> {
  const worker = await tesseract();
  const { data } = await worker.recognize(Buffer.from(png.buffer, png.byteOffset, png.byteLength));
  return data.text;
}

const port = parentPort;
if (port) {
  port.on('message', (request: OcrRequest) => {
    recognise(request.png).then(
      (text) => port.postMessage({ id: request.id, ok: true, text } satisfies OcrReply),
      (error: unknown) => port.postMessage({ id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) } satisfies OcrReply),
    );
  });
  port.postMessage({ ready: true } satisfies OcrReply);
}
