import { constants, inflateSync } from 'node:zlib';

/**
 * What the Flate streams of one PDF may inflate to, all together: far above an honest 5 MiB file
 * (text and images compress a few times to a few dozen times), far below what a decompression bomb
 * asks for (deflate reaches about 1000:1, so a 5 MiB upload could inflate to 5 GiB). pdf.js's
 * decoded buffers are ArrayBuffers, outside the thread's heap limit: this is their bound.
 */
export const PDF_MAX_INFLATED_BYTES = 256 * 1024 * 1024;

const STREAM = Buffer.from('stream');
const END = Buffer.from('endstream');

/**
 * Inflates every `stream … endstream` of a PDF's bytes that is zlib data, each with at most what is
 * left of the budget as its output, and returns the error message when the sum would pass
 * `budget` (null when it does not). Streams that are not zlib data (images in DCT, JBIG2 or JPX,
 * which the pixel limit bounds; encrypted streams) are skipped, as are corrupt ones (pdf.js says
 * what it makes of them). Runs in the reader's thread, before pdf.js sees the file; one output
 * buffer at a time.
 */
export function inflatedBudgetError(bytes: Uint8Array, budget = PDF_MAX_INFLATED_BYTES): string | null {
  const pdf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let left = budget;
  for (let at = pdf.indexOf(STREAM); at !== -1; at = pdf.indexOf(STREAM, at + 1)) {
    // `endstream` contains `stream`: only a keyword followed by its end of line opens one.
    let start = at + STREAM.length;
    if (pdf[start] === 0x0d) start++;
    if (pdf[start] !== 0x0a || (at >= 3 && pdf.subarray(at - 3, at).toString('latin1') === 'end')) continue;
    start++;
    const end = pdf.indexOf(END, start);
    if (end === -1) break;
    // zlib's header: CMF 0x?8 and a check of (CMF·256 + FLG) divisible by 31.
    const cmf = pdf[start] ?? 0;
    const flg = pdf[start + 1] ?? 0;
    if ((cmf & 0x0f) === 8 && ((cmf << 8) | flg) % 31 === 0) {
      try {
        left -= inflateSync(pdf.subarray(start, end), { maxOutputLength: Math.max(1, left), finishFlush: constants.Z_SYNC_FLUSH /* a truncated stream is read as far as it goes */ }).length;
      } catch (error) {
        if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') left = -1;
      }
      if (left < 0) return `its compressed streams inflate to more than ${Math.round(budget / 1024 / 1024)} MiB`;
    }
    at = end + END.length - 1;
  }
  return null;
}
