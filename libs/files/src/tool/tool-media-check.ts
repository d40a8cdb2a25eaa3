import { createHash } from 'node:crypto';
import { sanitizeFilename } from '../filename.js';
import { imageExtension, MAX_IMAGE_BYTES_TOTAL, MAX_IMAGES_PER_MESSAGE } from '../inline/inline-image-sniffing.js';
import { sniffUpload } from '../file-sniffing.js';

/** One image or audio clip of a tool's result, as the tool sent it (libs/tools' ToolMedia). */
export interface ToolMediaPart {
  kind: 'image' | 'audio';
  mimeType: string;
  data: Buffer;
}

/** An image of a tool result that is to be stored: its type sniffed from the bytes, its name made here. */
export interface ToolImage {
  /** Its number among the result's media (1-based), as the output's `[image N: …]` line names it. */
  number: number;
  filename: string;
  bytes: Buffer;
  mimeType: string;
  sha256: string;
}

export interface ToolMediaLimits {
  /** Images stored per tool result. */
  count: number;
  /** Decoded bytes stored per tool result. */
  bytes: number;
}

/** The limits of a user message's inline images, applied to each tool result. */
export const TOOL_MEDIA_LIMITS: ToolMediaLimits = { count: MAX_IMAGES_PER_MESSAGE, bytes: MAX_IMAGE_BYTES_TOTAL };

/**
 * Which media of a tool result are stored as session files, and a note for each that is not (what
 * the model reads instead). Images are sniffed like inline images (the type the server declared is
 * not trusted): PNG, JPEG, GIF or WebP, what the model providers read. Audio is never kept: no
 * provider of this service takes audio input. Pure.
 */
export async function checkToolMedia(toolName: string, media: readonly ToolMediaPart[], limits: ToolMediaLimits = TOOL_MEDIA_LIMITS): Promise<{ images: ToolImage[]; notes: string[] }> {
  const images: ToolImage[] = [];
  const notes: string[] = [];
  let total = 0;
  for (const [index, part] of media.entries()) {
    const number = index + 1;
    const refused = (why: string): void => {
      notes.push(`[${part.kind} ${number} not shown: ${why}]`);
    };
    if (part.kind === 'audio') {
      refused('the model does not take audio');
      continue;
    }
    if (part.data.length === 0) {
      refused('the tool sent no bytes');
      continue;
    }
    const sniffed = await sniffUpload(part.data, 'image');
    if (!sniffed.ok || !sniffed.mimeType.startsWith('image/')) {
      const detected = sniffed.ok ? sniffed.mimeType : sniffed.detected;
      refused(`the bytes are ${detected ?? 'no recognised image'}, not a PNG, JPEG, GIF or WebP image`);
      continue;
    }
    if (images.length >= limits.count) {
      refused(`at most ${limits.count} images of one tool result are kept`);
      continue;
    }
    if (total + part.data.length > limits.bytes) {
      refused(`the images of one tool result are kept up to ${limits.bytes} bytes`);
      continue;
    }
    total += part.data.length;
    images.push({
      number,
      filename: sanitizeFilename(`${toolName}-${number}.${imageExtension(sniffed.mimeType)}`, `tool-${number}.${imageExtension(sniffed.mimeType)}`),
      bytes: part.data,
      mimeType: sniffed.mimeType,
      sha256: createHash('sha256').update(part.data).digest('hex'),
    });
  }
  return { images, notes };
}
