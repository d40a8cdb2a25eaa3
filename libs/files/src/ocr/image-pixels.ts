import type { Sharp, SharpOptions } from 'sharp';

/**
 * The most pixels an image may declare to be decoded at all (OCR, thumbnails): 40 megapixels, a
 * 300 dpi A3 scan with room to spare. An image's header is read before any pixel is decoded: a
 * few kilobytes that declare 50 000 × 50 000 pixels (an "image bomb", gigabytes once decoded) are
 * refused at once instead.
 */
export const MAX_IMAGE_PIXELS = 40_000_000;

/** An image refused before decoding: its header declares more pixels than allowed. The message is safe to show. */
export class ImageTooLargeError extends Error {
  override readonly name = 'ImageTooLargeError';
  constructor(
    readonly width: number,
    readonly height: number,
    readonly limitPixels: number,
  ) {
    super(`the image declares ${width} × ${height} pixels (${Math.round((width * height) / 1e6)} megapixels), more than the ${limitPixels / 1e6} megapixels allowed`);
  }
}

/** Bytes that are not an image the decoder reads (a truncated or corrupt file). The message is safe to show. */
export class ImageUnreadableError extends Error {
  override readonly name = 'ImageUnreadableError';
}

type SharpFactory = (input?: Buffer | Uint8Array, options?: SharpOptions) => Sharp;
let sharpModule: Promise<SharpFactory> | undefined;

/**
 * sharp (libvips) loaded on first use: neither process pays for loading it until an image is
 * processed. It runs here, on the event loop's own thread pool (never blocking the loop), not in
 * a worker thread: libvips must stay loaded in the main thread (sharp's documented rule for
 * worker threads on glibc Linux).
 */
function loadSharp(): Promise<SharpFactory> {
  sharpModule ??= import('sharp').then((module) => module.default as unknown as SharpFactory);
  return sharpModule;
}

/** The header's dimensions, checked against `maxPixels` before anything is decoded. */
export async function checkImageHeader(bytes: Uint8Array, maxPixels = MAX_IMAGE_PIXELS): Promise<{ width: number; height: number; format: string }> {
  const sharp = await loadSharp();
  let metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new ImageUnreadableError(`the image could not be read (${error instanceof Error ? error.message : String(error)})`);
  }
  const { width, height, format } = metadata;
  if (!width || !height) throw new ImageUnreadableError('the image has no dimensions');
  if (width * height > maxPixels) throw new ImageTooLargeError(width, height, maxPixels);
  return { width, height, format };
}

/** Decoding options: the pixel limit again (libvips enforces it itself), the first frame of an animation only. */
function decoder(sharp: SharpFactory, bytes: Uint8Array, maxPixels: number): Sharp {
  return sharp(bytes, { limitInputPixels: maxPixels, pages: 1, failOn: 'error' }).rotate();
}

async function decoded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new ImageUnreadableError(`the image could not be decoded (${error instanceof Error ? error.message : String(error)})`);
  }
}

/**
 * An encoded image as the greyscale PNG tesseract reads best (EXIF orientation applied, first
 * frame of a GIF or animated WebP); rejects with ImageTooLargeError before decoding a bomb.
 */
export async function imageForOcr(bytes: Uint8Array, maxPixels = MAX_IMAGE_PIXELS): Promise<Buffer> {
  await checkImageHeader(bytes, maxPixels);
  const sharp = await loadSharp();
  return decoded(() => decoder(sharp, bytes, maxPixels).greyscale().png({ compressionLevel: 1 }).toBuffer());
}

/** Raw pixels (as pdf.js extracts a page's image) as the greyscale PNG tesseract reads. */
export async function rawPixelsForOcr(raw: { data: Uint8Array; width: number; height: number; channels: 1 | 2 | 3 | 4 }, maxPixels = MAX_IMAGE_PIXELS): Promise<Buffer> {
  if (raw.width * raw.height > maxPixels) throw new ImageTooLargeError(raw.width, raw.height, maxPixels);
  const sharp = await loadSharp();
  return decoded(() =>
    sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: raw.channels }, limitInputPixels: maxPixels })
      .greyscale()
      .png({ compressionLevel: 1 })
      .toBuffer(),
  );
}

export interface Thumbnail {
  bytes: Buffer;
  width: number;
  height: number;
  mimeType: 'image/webp';
}

/** A WebP that fits in `maxWidth` × `maxHeight`, never enlarged; the same header check first. */
export async function thumbnail(bytes: Uint8Array, maxWidth: number, maxHeight: number, maxPixels = MAX_IMAGE_PIXELS): Promise<Thumbnail> {
  await checkImageHeader(bytes, maxPixels);
  const sharp = await loadSharp();
  const { data, info } = await decoded(() =>
    decoder(sharp, bytes, maxPixels).resize({ width: maxWidth, height: maxHeight, fit: 'inside', withoutEnlargement: true }).webp({ quality: 80 }).toBuffer({ resolveWithObject: true }),
  );
  return { bytes: data, width: info.width, height: info.height, mimeType: 'image/webp' };
}

/** An image as a model request carries it: its bytes, type and size in pixels. */
export interface ModelImage {
  bytes: Buffer;
  mimeType: string;
  width: number;
  height: number;
  /** Whether the bytes were re-encoded at a smaller size. */
  downscaled: boolean;
}

/**
 * An image ready for a model request: unchanged when the provider would look at it whole, else
 * decoded and downscaled to `target(width, height)` (the size the provider would scale it to
 * anyway), as PNG for PNG and GIF (first frame), JPEG and WebP as themselves. The header check
 * comes first, so a bomb is never decoded. Null when the bytes are no image the decoder reads.
 */
export async function imageForModel(
  bytes: Buffer,
  mimeType: string,
  target: (width: number, height: number) => { width: number; height: number },
  maxPixels = MAX_IMAGE_PIXELS,
): Promise<ModelImage | null> {
  let header;
  try {
    header = await checkImageHeader(bytes, maxPixels);
  } catch (error) {
    if (error instanceof ImageUnreadableError || error instanceof ImageTooLargeError) return null;
    throw error;
  }
  const size = target(header.width, header.height);
  if (size.width >= header.width && size.height >= header.height) return { bytes, mimeType, width: header.width, height: header.height, downscaled: false };
  const sharp = await loadSharp();
  const resized = decoder(sharp, bytes, maxPixels).resize({ width: size.width, height: size.height, fit: 'fill' });
  const encoded = mimeType === 'image/jpeg' ? resized.jpeg({ quality: 85 }) : mimeType === 'image/webp' ? resized.webp({ quality: 85 }) : resized.png();
  try {
    const { data, info } = await encoded.toBuffer({ resolveWithObject: true });
    const type = mimeType === 'image/jpeg' || mimeType === 'image/webp' ? mimeType : 'image/png';
    return { bytes: data, mimeType: type, width: info.width, height: info.height, downscaled: true };
  } catch {
    return null;
  }
}
