import { sniffUpload } from '../file-sniffing.js';

/** Inline images per user message; also the most images one tool result stores. */
export const MAX_IMAGES_PER_MESSAGE = 10;
/**
 * Decoded bytes of inline images per submission. The upstream API says 80 MiB, but also that a submission's body
 * is at most 100 MiB, and 80 MiB travel as about 107 MiB of base64: 72 MiB (96 MiB encoded) is the
 * most that fits with room for the text (README "Differences from the Agents Public API"). Also the most image bytes
 * one tool result stores.
 */
export const MAX_IMAGE_BYTES_TOTAL = 72 * 1024 * 1024;

export type InlineImageCheck = { ok: true; mimeType: string } | { ok: false; message: string };

/**
 * Whether the bytes of a `data:image/<subtype>;base64,…` URL are that image type, decided from the
 * bytes with the same sniffing as uploads (the declared subtype plays the filename extension's
 * part: `jpg` and `jpeg` both name JPEG). Pure.
 */
export async function checkInlineImage(bytes: Uint8Array, declaredSubtype: string): Promise<InlineImageCheck> {
  if (bytes.length === 0) return { ok: false, message: 'the data URL holds no bytes' };
  const sniffed = await sniffUpload(bytes, `image.${declaredSubtype}`);
  if (sniffed.ok && sniffed.mimeType.startsWith('image/')) return { ok: true, mimeType: sniffed.mimeType };
  const detected = sniffed.ok ? sniffed.mimeType : sniffed.detected;
  return { ok: false, message: `the bytes are ${detected ?? 'not a recognised image'}, not image/${declaredSubtype} as the data URL declares` };
}

/** The filename extension of an accepted image type (for the stored file's name). */
export function imageExtension(mimeType: string): string {
  return mimeType === 'image/jpeg' ? 'jpg' : mimeType.replace(/^image\//, '');
}
