import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { imageForModel } from '#libs/files';
import { IMAGE_TOKENS, imageTokens, type ModelMessage, modelImageSize, type ModelUserPart } from '#libs/models';

const LEFT_OUT_PREFIX = '[image not sent: the images of this request reached their limit';

/** What the model reads instead of an image a request had no room for (see capRequestImages). */
export function imageLeftOutText(maxBytes: number): string {
  return `${LEFT_OUT_PREFIX} of ${maxBytes} bytes; older images are left out]`;
}

/** The decoded size of a `data:…;base64,` URL, from its length (nothing is decoded). */
export function dataUrlBytes(url: string): number {
  const comma = url.indexOf(',');
  const base64 = comma < 0 ? url.length : url.length - comma - 1;
  const padding = url.endsWith('==') ? 2 : url.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((base64 * 3) / 4) - padding);
}

/**
 * The images of one request within `maxBytes` (decoded) together: the newest are kept, and from
 * the first that does not fit on, every older image becomes a text note saying it was left out
 * (one cut, so the model sees the latest images whole, never a random subset of the history).
 * Messages without images are returned as they are.
 */
export function capRequestImages(messages: readonly ModelMessage[], maxBytes: number): ModelMessage[] {
  let left = maxBytes;
  let spent = false;
  const result = [...messages];
  for (let m = result.length - 1; m >= 0; m--) {
    const message = result[m]!;
    if (message.role !== 'user' || !message.parts?.some((part) => part.type === 'image')) continue;
    const parts = [...message.parts];
    for (let p = parts.length - 1; p >= 0; p--) {
      const part = parts[p]!;
      if (part.type !== 'image') continue;
      const bytes = dataUrlBytes(part.url);
      if (!spent && bytes <= left) {
        left -= bytes;
        continue;
      }
      spent = true;
      parts[p] = { type: 'text', text: imageLeftOutText(maxBytes) };
    }
    result[m] = { ...message, parts };
  }
  return result;
}

/** What a note standing for a left-out image costs, about (a short line of text). */
const NOTE_TOKENS = 25;

/**
 * How far the images of prepared messages are from the flat estimate the items counted for them
 * (IMAGE_TOKENS each): a measured image counts by its size (imageTokens), a left-out one as its
 * note; an image of unknown size as estimated. Zero for a context without images.
 */
export function imageTokenAdjustment(messages: readonly ModelMessage[]): number {
  let adjustment = 0;
  for (const message of messages) {
    if (message.role !== 'user' || !message.parts) continue;
    for (const part of message.parts) {
      if (part.type === 'image') adjustment += part.width && part.height ? imageTokens(part.width, part.height) - IMAGE_TOKENS : 0;
      else if (part.text.startsWith(LEFT_OUT_PREFIX)) adjustment += NOTE_TOKENS - IMAGE_TOKENS;
    }
  }
  return adjustment;
}

/** Downscaled images a worker keeps (by the SHA-256 of the URL it replaces), at most this many bytes together. */
const CACHE_BYTES = 32 * 1024 * 1024;

/**
 * The images of a model request as they are sent: each one larger than what the provider looks at
 * (OpenAI's high-detail scaling: 2048 px square, shortest side 768) is downscaled to that size
 * first, each is measured (its tokens count by its size, see libs/models imageTokens), and the
 * request's images together stay within MODEL_REQUEST_IMAGE_BYTES (the oldest left out with a
 * note). A history is sent again with every call: downscaled images are remembered (bounded). A
 * context without images costs one scan of its messages.
 */
@Injectable()
export class ModelImages {
  private readonly cache = new Map<string, { url: string; width: number; height: number }>();
  private cachedBytes = 0;

  constructor(private readonly config: AppConfig) {}

  async prepare(messages: ModelMessage[]): Promise<ModelMessage[]> {
    if (!messages.some((message) => message.role === 'user' && message.parts?.some((part) => part.type === 'image'))) return messages;
    const sized: ModelMessage[] = [];
    for (const message of messages) {
      if (message.role !== 'user' || !message.parts?.some((part) => part.type === 'image')) {
        sized.push(message);
        continue;
      }
      const parts: ModelUserPart[] = [];
      for (const part of message.parts) parts.push(part.type === 'image' ? await this.sized(part.url) : part);
      sized.push({ ...message, parts });
    }
    return capRequestImages(sized, this.config.modelRequestImageBytes);
  }

  private async sized(url: string): Promise<ModelUserPart> {
    const match = /^data:([^;,]+);base64,/.exec(url);
    if (!match) return { type: 'image', url };
    const key = createHash('sha256').update(url).digest('base64');
    const known = this.cache.get(key);
    if (known) return { type: 'image', ...known };
    const image = await imageForModel(Buffer.from(url.slice(match[0].length), 'base64'), match[1]!, modelImageSize);
    // Bytes no decoder reads go as they are: the provider judges them, as before.
    if (!image) return { type: 'image', url };
    if (!image.downscaled) return { type: 'image', url, width: image.width, height: image.height };
    const sent = { url: `data:${image.mimeType};base64,${image.bytes.toString('base64')}`, width: image.width, height: image.height };
    this.remember(key, sent);
    return { type: 'image', ...sent };
  }

  private remember(key: string, sent: { url: string; width: number; height: number }): void {
    if (sent.url.length > CACHE_BYTES / 4) return;
    if (this.cachedBytes + sent.url.length > CACHE_BYTES) {
      this.cache.clear();
      this.cachedBytes = 0;
    }
    this.cache.set(key, sent);
    this.cachedBytes += sent.url.length;
  }
}
