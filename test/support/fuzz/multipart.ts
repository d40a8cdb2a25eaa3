import fc from 'fast-check';
import { PNG } from '../file-fixtures.js';
import type { Schema } from './openapi-model.js';
import { HOSTILE_STRINGS } from './values.js';

// multipart/form-data bodies for an upload operation (`POST /files`): mostly valid small files of
// accepted kinds, so that uploads reach the type checks and the store, and now and then the faults
// a multipart parser meets: wrong field names, several files, parts without a filename, contents
// that are not what the name says, empty or oversized files, truncated bodies, bad boundaries.

/** One part of a multipart body. */
export interface Part {
  name: string;
  /** Absent: a plain field, not a file. */
  filename?: string;
  /** The part's own Content-Type (the server ignores it for files). */
  contentType?: string;
  data: Uint8Array;
}

/** The bytes of a multipart body, its Content-Type, and how a failure message shows it. */
export interface MultipartBody {
  bytes: Uint8Array;
  contentType: string | null;
  shown: string;
  notes: string[];
}

const BOUNDARY = 'fuzz-boundary-7MA4YWxkTrZu0gW';
const text = (value: string) => new TextEncoder().encode(value);

/** Small valid files of accepted kinds, with a name whose extension matches. */
const VALID_FILES: readonly { filename: string; data: Uint8Array }[] = [
  { filename: 'notes.txt', data: text('fuzz notes\nsecond line\n') },
  { filename: 'readme.md', data: text('# Fuzz\n\nA *markdown* file.\n') },
  { filename: 'table.csv', data: text('a,b\n1,2\n') },
  { filename: 'data.json', data: text('{"fuzz":true}\n') },
  { filename: 'unicode.txt', data: text('你好, Ωmega, é\n') },
  { filename: 'pixel.png', data: PNG },
];

/** Bytes no accepted kind has: the start of an ELF binary, a ZIP, invalid UTF-8. */
const UNACCEPTED: readonly { note: string; data: Uint8Array }[] = [
  { note: 'ELF bytes', data: Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Array<number>(56).fill(0)]) },
  { note: 'ZIP bytes', data: Uint8Array.from([0x50, 0x4b, 0x03, 0x04, 20, 0, 0, 0, 8, 0, ...new Array<number>(20).fill(0)]) },
  { note: 'invalid UTF-8', data: Uint8Array.from([0x66, 0x75, 0xff, 0xfe, 0x7a, 0x0a]) },
];

const PART_TYPES: readonly (string | undefined)[] = [undefined, 'application/octet-stream', 'text/plain', 'image/png', 'application/x-msdownload', 'nonsense'];

/** A multipart body of these parts, boundary-delimited as RFC 7578 writes it. */
export function encodeParts(parts: Part[], boundary = BOUNDARY): Uint8Array {
  const chunks: Uint8Array[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename.replace(/["\r\n]/g, '_')}"`}`;
    const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.contentType ? `Content-Type: ${part.contentType}\r\n` : ''}\r\n`;
    chunks.push(text(head), part.data, text('\r\n'));
  }
  chunks.push(text(`--${boundary}--\r\n`));
  return concat(chunks);
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

function describe(parts: Part[]): string {
  return parts.map((p) => `${p.name}${p.filename === undefined ? '' : ` (${JSON.stringify(p.filename.slice(0, 40))})`}: ${p.data.length} bytes`).join(', ');
}

function body(parts: Part[], notes: string[], options: { boundary?: string; contentType?: string | null; cut?: number } = {}): MultipartBody {
  let bytes = encodeParts(parts, options.boundary);
  if (options.cut !== undefined) bytes = bytes.subarray(0, Math.max(0, bytes.length - options.cut));
  const contentType = options.contentType === undefined ? `multipart/form-data; boundary=${BOUNDARY}` : options.contentType;
  return { bytes, contentType, shown: `multipart: ${describe(parts) || '(no parts)'}`, notes };
}

/**
 * Bodies for an operation that takes multipart/form-data. The schema names the file field (the
 * first `format: binary` property); the valid cases put one small accepted file there.
 */
export function multipartValue(schema: Schema): fc.Arbitrary<MultipartBody> {
  const field = Object.entries((schema.properties ?? {}) as Record<string, Schema>).find(([, s]) => s.format === 'binary')?.[0] ?? 'file';
  const valid = fc.tuple(fc.constantFrom(...VALID_FILES), fc.constantFrom(...PART_TYPES)).map(([file, contentType]): Part => ({ name: field, ...file, contentType }));
  const weighted = (...options: [number, fc.Arbitrary<MultipartBody>][]) => fc.oneof(...options.map(([weight, arbitrary]) => ({ weight, arbitrary })));
  return weighted(
    [12, valid.map((part) => body([part], []))],
    // A plain field next to the file: read and ignored.
    [2, fc.tuple(valid, fc.constantFrom('purpose', 'note', 'x')).map(([part, name]) => body([{ name, data: text('assistants') }, part], [`an extra field ${name}`]))],
    [1, fc.constantFrom(...HOSTILE_STRINGS.filter((h) => h.length < 2_000 && h !== '')).map((name) => body([{ name: field, filename: `${name}.txt`, data: text('hostile name\n') }], [`filename ${JSON.stringify(name.slice(0, 20))}.txt`]))],
    [1, fc.constantFrom('../../etc/passwd.txt', 'C:\\temp\\a.txt', `${'n'.repeat(300)}.txt`, 'noextension', '.txt', 'a.txt.exe').map((filename) => body([{ name: field, filename, data: text('a path\n') }], [`filename ${JSON.stringify(filename.slice(0, 30))}`]))],
    [1, fc.constantFrom(...VALID_FILES).map((file) => body([{ name: field, filename: file.filename.endsWith('.png') ? 'image.txt' : 'text.png', data: file.data }], ['content not what the extension says']))],
    [1, fc.constantFrom(...UNACCEPTED).map(({ note, data }) => body([{ name: field, filename: 'upload.bin', data }], [note]))],
    [1, fc.constant(body([{ name: field, filename: 'empty.txt', data: new Uint8Array() }], ['an empty file']))],
    [1, fc.tuple(valid, fc.constantFrom('files', 'upload', 'File', '', 'file[]')).map(([part, name]) => body([{ ...part, name }], [`the file in field ${JSON.stringify(name)}`]))],
    [1, fc.tuple(valid, valid, fc.boolean()).map(([a, b, third]) => body(third ? [a, b, { ...a, filename: `3-${a.filename}` }] : [a, b], [`${third ? 3 : 2} files`]))],
    [1, valid.map((part) => body([{ name: field, data: part.data }], ['the file field without a filename']))],
    [1, fc.constant(body([], ['no parts']))],
    [1, fc.tuple(valid, fc.integer({ min: 1, max: 40 })).map(([part, cut]) => body([part], [`truncated by ${cut} bytes`], { cut }))],
    [
      1,
      fc.tuple(valid, fc.constantFrom<string | null>('multipart/form-data', 'multipart/form-data; boundary=other', 'multipart/mixed; boundary=' + BOUNDARY, 'application/json', null)).map(([part, contentType]) =>
        body([part], [`Content-Type ${JSON.stringify(contentType)}`], { contentType }),
      ),
    ],
    // Just over the 5 MiB limit (rare: a few megabytes each).
    [1, fc.constant(body([{ name: field, filename: 'big.txt', data: new Uint8Array(5 * 1024 * 1024 + 1).fill(0x61) }], ['a file over 5 MiB']))],
  );
}
