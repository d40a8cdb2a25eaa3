import { fileTypeFromBuffer } from 'file-type';
import { extensionOf } from './filename.js';

/** The binary kinds accepted, by the MIME type detected from their magic bytes, with the extensions that may name them. */
const BINARY_KINDS: Readonly<Record<string, readonly string[]>> = {
  'image/png': ['png'],
  'image/jpeg': ['jpg', 'jpeg', 'jpe', 'jfif'],
  'image/gif': ['gif'],
  'image/webp': ['webp'],
  'application/pdf': ['pdf'],
};

/** Text kinds: no magic bytes, so the extension names the kind and the bytes must be UTF-8 text (JSON must parse). */
const TEXT_KINDS: Readonly<Record<string, string>> = {
  '': 'text/plain',
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
};

export type SniffResult =
  | { ok: true; mimeType: string }
  | { ok: false; reason: 'not_allowed'; detected: string | null; message: string }
  | { ok: false; reason: 'mismatch'; detected: string; message: string };

/**
 * Decides what an upload is from its bytes alone (the client's content type is never consulted):
 * a binary file must be of an accepted kind and its extension (if any) must name that kind; a file
 * without magic bytes must be valid UTF-8 text without control characters, named as a text kind
 * (or with no extension). Pure: the same bytes and name always give the same answer.
 */
export async function sniffUpload(bytes: Uint8Array, filename: string): Promise<SniffResult> {
  const ext = extensionOf(filename);
  const detected = await fileTypeFromBuffer(bytes);
  if (detected) {
    const extensions = BINARY_KINDS[detected.mime];
    if (!extensions) return { ok: false, reason: 'not_allowed', detected: detected.mime, message: `Files of type ${detected.mime} are not accepted` };
    if (ext !== '' && !extensions.includes(ext)) {
      return { ok: false, reason: 'mismatch', detected: detected.mime, message: `The content is ${detected.mime}, but the filename says .${ext}` };
    }
    return { ok: true, mimeType: detected.mime };
  }
  const binaryKind = Object.entries(BINARY_KINDS).find(([, extensions]) => extensions.includes(ext))?.[0];
  const text = isPlainText(bytes);
  if (binaryKind) {
    return text
      ? { ok: false, reason: 'mismatch', detected: 'text/plain', message: `The filename says .${ext}, but the content is text, not ${binaryKind}` }
      : { ok: false, reason: 'not_allowed', detected: null, message: `The filename says .${ext}, but the content is not a valid ${binaryKind} file` };
  }
  if (!text) return { ok: false, reason: 'not_allowed', detected: null, message: 'The content is neither an accepted image, a PDF, nor UTF-8 text' };
  const mimeType = Object.hasOwn(TEXT_KINDS, ext) ? TEXT_KINDS[ext] : undefined;
  if (!mimeType) return { ok: false, reason: 'not_allowed', detected: 'text/plain', message: `Text files named .${ext} are not accepted (use .txt, .md, .csv, .tsv, .json or .log)` };
  if (mimeType === 'application/json' && !parsesAsJson(bytes)) {
    return { ok: false, reason: 'mismatch', detected: 'text/plain', message: 'The filename says .json, but the content is not valid JSON' };
  }
  return { ok: true, mimeType };
}

/** Valid UTF-8 without NUL or other control characters (tab, newlines and form feed allowed); a leading BOM is fine. */
export function isPlainText(bytes: Uint8Array): boolean {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return false;
  }
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text);
}

function parsesAsJson(bytes: Uint8Array): boolean {
  try {
    JSON.parse(new TextDecoder('utf-8').decode(bytes));
    return true;
  } catch {
    return false;
  }
}
