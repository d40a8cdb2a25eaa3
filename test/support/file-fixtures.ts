import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { crc32, deflateSync } from 'node:zlib';

// Bytes of real file kinds, for upload and sniffing tests (no stack needed).

/** A 1×1 PNG. */
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/** The start of a real executable: the node binary this suite runs on (ELF on Linux). */
export function executableBytes(size = 256 * 1024): Buffer {
  return readFileSync(process.execPath).subarray(0, size);
}

/** A one-page PDF whose text layer says `text` (ASCII), with a correct cross-reference table. */
/** A one-page PDF whose content stream is `content` compressed with FlateDecode (a bomb when `content` is large and repetitive). */
export function pdfWithFlateContent(content: Buffer): Buffer {
  const packed = deflateSync(content);
  const head = [
    '%PDF-1.4\n',
    '1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n',
    '2 0 obj\n<< /Type /Pages /Kids [4 0 R] /Count 1 >>\nendobj\n',
    '3 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n',
    '4 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R /Resources << /Font << /F1 3 0 R >> >> >>\nendobj\n',
  ];
  // Objects 1–4 start where each part of `head` after the header does, object 5 right after them.
  const offsets: number[] = [];
  let length = 0;
  for (const part of head) {
    if (length > 0) offsets.push(length);
    length += Buffer.byteLength(part, 'latin1');
  }
  offsets.push(length);
  const stream = Buffer.concat([Buffer.from(`5 0 obj\n<< /Length ${packed.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'), packed, Buffer.from('\nendstream\nendobj\n', 'latin1')]);
  const xref = length + stream.length;
  const table = `xref\n0 6\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.concat([Buffer.from(head.join(''), 'latin1'), stream, Buffer.from(table, 'latin1')]);
}

export function pdfWithText(text: string): Buffer {
  return pdfWithPages([text]);
}

/** A PDF with one page per text (ASCII), each page's text layer saying it. */
export function pdfWithPages(texts: string[]): Buffer {
  const escape = (text: string) => text.replace(/[()\\]/g, (c) => `\\${c}`);
  // Objects: 1 catalog, 2 page tree, 3 font, then a page and its content stream for each text.
  const pageRef = (index: number) => `${4 + index * 2} 0 R`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${texts.map((_, index) => pageRef(index)).join(' ')}] /Count ${texts.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  texts.forEach((text, index) => {
    const content = `BT /F1 18 Tf 72 720 Td (${escape(text)}) Tj ET`;
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${5 + index * 2} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`);
    objects.push(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
  });
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(pdf.length);
    pdf += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

/**
 * A valid RGB PNG of random pixels, at least `minBytes` long (stored without compression, so its
 * size is predictable): unique bytes on every call.
 */
export function randomPng(minBytes: number): Buffer {
  const width = 1024;
  const rowBytes = 1 + width * 3;
  const height = Math.max(1, Math.ceil(minBytes / rowBytes));
  const raw = randomBytes(rowBytes * height);
  for (let row = 0; row < height; row++) raw[row * rowBytes] = 0; // filter type None
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, deflate, no filter method extras, no interlace
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 0 })), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * An image bomb: a valid 1-bit greyscale PNG of `width` × `height` black pixels (400 megapixels by
 * default) that compresses to a few tens of kilobytes and would take gigabytes once decoded.
 */
export function pngBomb(width = 20_000, height = 20_000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([1, 0, 0, 0, 0], 8); // 1-bit greyscale, deflate, adaptive filtering, no interlace
  // Every row: filter byte 0, then zeros; all zeros together.
  const raw = Buffer.alloc((1 + Math.ceil(width / 8)) * height);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * A scanned PDF: each of its `pageCount` pages is the one 8-bit greyscale image (FlateDecode) drawn
 * over the page, with no text layer, as a scanner writes it (pages share the image object).
 */
export function scannedPdf(image: { width: number; height: number; grey: Uint8Array }, pageCount = 1): Buffer {
  const pixels = deflateSync(image.grey);
  const content = `q 612 0 0 ${Math.round((612 * image.height) / image.width)} 0 200 cm /Im1 Do Q`;
  const parts: Buffer[] = [];
  const offsets: number[] = [];
  let length = 0;
  const push = (part: string | Buffer) => {
    const buffer = typeof part === 'string' ? Buffer.from(part, 'latin1') : part;
    parts.push(buffer);
    length += buffer.length;
  };
  // Objects: 1 catalog, 2 page tree, 3 content stream, 4 image, then the pages.
  const pageRefs = Array.from({ length: pageCount }, (_, index) => `${5 + index} 0 R`);
  const objects: (string | Buffer[])[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pageRefs.join(' ')}] /Count ${pageCount} >>`,
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    [
      Buffer.from(`<< /Type /XObject /Subtype /Image /Width ${image.width} /Height ${image.height} /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length ${pixels.length} >>\nstream\n`, 'latin1'),
      pixels,
      Buffer.from('\nendstream', 'latin1'),
    ],
    ...pageRefs.map(() => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /XObject << /Im1 4 0 R >> >> >>'),
  ];
  push('%PDF-1.4\n');
  objects.forEach((object, index) => {
    offsets.push(length);
    push(`${index + 1} 0 obj\n`);
    if (typeof object === 'string') push(object);
    else object.forEach(push);
    push('\nendobj\n');
  });
  const xref = length;
  push(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`);
  push(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return Buffer.concat(parts);
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}
