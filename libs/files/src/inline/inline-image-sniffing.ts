import { sniffUpload } from '../file-sniffing.js';

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
