import { MAX_IMAGE_BYTES_TOTAL, MAX_IMAGES_PER_MESSAGE } from '#libs/files';
import { DomainError } from '#libs/errors';
import type { InputContentBlock, InputMessage } from '#libs/engine';

export { MAX_IMAGE_BYTES_TOTAL, MAX_IMAGES_PER_MESSAGE };

export const MAX_MESSAGES = 20;
const DATA_IMAGE = /^data:image\/(png|jpeg|jpg|gif|webp);base64,([A-Za-z0-9+/=\s]+)$/;
/** Any inline image, to name a refused type precisely. */
const ANY_DATA_IMAGE = /^data:(image\/[^;,]+)[;,]/i;
/**
 * What the model providers read (OpenAI: PNG, JPEG, WebP, GIF; Anthropic: JPEG, PNG, GIF, WebP). Not
 * SVG (a document that may carry scripts, no raster image), HEIC/AVIF/TIFF/BMP (no provider reads them).
 */
export const INLINE_IMAGE_TYPES = 'png, jpeg (jpg), gif or webp';

/** The declared image subtype and the base64 payload of an inline image URL, or null when it is none. */
export function parseDataImageUrl(url: string): { subtype: string; base64: string } | null {
  const match = DATA_IMAGE.exec(url);
  return match?.[1] && match[2] ? { subtype: match[1], base64: match[2] } : null;
}

export interface ParsedInput {
  messages: InputMessage[];
  errors: string[];
}

/**
 * Parses of array inputs, by the array: the validator (IsAgentInput) and the use case read the
 * same request body, which may hold 96 MiB of data URLs; the second reader gets the first's result.
 * Only the parsed messages are kept, whose strings are the body's own (no copies).
 */
const parsedInputs = new WeakMap<object, ParsedInput>();

/**
 * Normalises `input` (a string, or ordered user messages whose content is a string or blocks) into
 * messages of content blocks, collecting every problem with its path rather than stopping at the first.
 */
export function parseAgentInput(raw: unknown): ParsedInput {
  if (!Array.isArray(raw)) return parseInput(raw);
  let parsed = parsedInputs.get(raw);
  if (!parsed) {
    parsed = parseInput(raw);
    parsedInputs.set(raw, parsed);
  }
  return parsed;
}

function parseInput(raw: unknown): ParsedInput {
  const errors: string[] = [];
  if (typeof raw === 'string') {
    if (raw.trim().length === 0) errors.push('input must not be empty');
    return { messages: [{ role: 'user', content: [{ type: 'input_text', text: raw }] }], errors };
  }
  if (!Array.isArray(raw)) return { messages: [], errors: ['input must be a string or an array of user messages'] };
  if (raw.length === 0 || raw.length > MAX_MESSAGES) errors.push(`input must hold 1–${MAX_MESSAGES} messages`);

  let imageBytes = 0;
  const messages: InputMessage[] = [];
  raw.forEach((message: unknown, m) => {
    const path = `input[${m}]`;
    if (!isObject(message)) {
      errors.push(`${path} must be an object`);
      return;
    }
    for (const key of Object.keys(message)) {
      if (key === 'yuxi') errors.push(`${path}.yuxi is not supported: attachments belong to the whole submission, send them as yuxi.attachment_file_ids`);
      else if (key !== 'role' && key !== 'content' && key !== 'type') errors.push(`${path}.${key} is an unknown field`);
    }
    if (message.type !== undefined && message.type !== 'message') errors.push(`${path}.type must be "message"`);
    if (message.role !== 'user') errors.push(`${path}.role must be "user"`);
    const content: InputContentBlock[] = [];
    if (typeof message.content === 'string') {
      if (message.content.trim().length === 0) errors.push(`${path}.content must not be empty`);
      content.push({ type: 'input_text', text: message.content });
    } else if (Array.isArray(message.content) && message.content.length > 0) {
      let images = 0;
      message.content.forEach((block: unknown, b) => {
        const blockPath = `${path}.content[${b}]`;
        if (!isObject(block)) return errors.push(`${blockPath} must be an object`);
        if (block.type === 'input_text') {
          for (const key of Object.keys(block)) if (key !== 'type' && key !== 'text') errors.push(`${blockPath}.${key} is an unknown field`);
          if (typeof block.text !== 'string' || block.text.length === 0) errors.push(`${blockPath}.text must be a non-empty string`);
          else content.push({ type: 'input_text', text: block.text });
        } else if (block.type === 'input_image') {
          for (const key of Object.keys(block)) if (key !== 'type' && key !== 'image_url') errors.push(`${blockPath}.${key} is an unknown field`);
          images += 1;
          const url = typeof block.image_url === 'string' ? block.image_url : '';
          const match = DATA_IMAGE.exec(url);
          const other = match ? null : ANY_DATA_IMAGE.exec(url);
          if (other?.[1] && !/^image\/(png|jpeg|jpg|gif|webp)$/i.test(other[1])) {
            errors.push(`${blockPath}.image_url is ${other[1].toLowerCase()}, which is not accepted: inline images are ${INLINE_IMAGE_TYPES} (what the models read), as base64`);
          } else if (!match?.[2]) {
            errors.push(`${blockPath}.image_url must be an inline data:image/...;base64 URL (remote image URLs are not supported)`);
          } else {
            imageBytes += Math.floor((base64Length(match[2]) * 3) / 4);
            content.push({ type: 'input_image', image_url: url });
          }
        } else {
          errors.push(`${blockPath}.type must be "input_text" or "input_image"`);
        }
        return undefined;
      });
      if (images > MAX_IMAGES_PER_MESSAGE) errors.push(`${path} has more than ${MAX_IMAGES_PER_MESSAGE} images`);
    } else {
      errors.push(`${path}.content must be a non-empty string or array of content blocks`);
    }
    messages.push({ role: 'user', content });
  });
  if (imageBytes > MAX_IMAGE_BYTES_TOTAL) errors.push(`input images exceed ${MAX_IMAGE_BYTES_TOTAL / 1024 / 1024} MiB in total`);
  return { messages, errors };
}

/** The plain text of a message, for model context and titles. */
export function messageText(message: InputMessage): string {
  return message.content
    .filter((block): block is Extract<InputContentBlock, { type: 'input_text' }> => block.type === 'input_text')
    .map((block) => block.text)
    .join('\n');
}

/** The base64 characters of a payload, whitespace not counted, without copying a payload that has none (the usual case). */
function base64Length(payload: string): number {
  if (!/\s/.test(payload)) return payload.length;
  let whitespace = 0;
  for (const run of payload.matchAll(/\s+/g)) whitespace += run[0].length;
  return payload.length - whitespace;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Refuses a submission whose text (its messages' text parts together, UTF-8 bytes) exceeds the
 * deployment's MAX_INPUT_TEXT_BYTES, naming the part where the sum passed it (`input[1].content[0].text`
 * under `prefix`). Text is tokenized, stored and sent to the model again on every call of the
 * session; the body limit is sized for images, so text has a bound of its own.
 */
export function checkInputText(raw: unknown, messages: readonly InputMessage[], limitBytes: number, prefix: string): void {
  checkTextParts(
    messages.flatMap((message, m) =>
      message.content.flatMap((block, b): [string, string][] => {
        if (block.type !== 'input_text') return [];
        const rawContent = Array.isArray(raw) ? (raw[m] as { content?: unknown } | undefined)?.content : undefined;
        return [[typeof raw === 'string' ? prefix : typeof rawContent === 'string' ? `${prefix}[${m}].content` : `${prefix}[${m}].content[${b}].text`, block.text]];
      }),
    ),
    limitBytes,
  );
}

/** The same bound over any submission's texts, given as [field, text] in order. */
export function checkTextParts(parts: readonly (readonly [string, string])[], limitBytes: number): void {
  let total = 0;
  for (const [field, text] of parts) {
    total += Buffer.byteLength(text, 'utf8');
    if (total <= limitBytes) continue;
    throw new DomainError('input_text_too_large', `${field}: the text of a submission is limited to ${limitBytes} bytes (MAX_INPUT_TEXT_BYTES); send long documents as files`, {
      field,
      limit_bytes: limitBytes,
    });
  }
}

/**
 * A text cut to at most `limitBytes` UTF-8 bytes (at a character boundary) plus a line saying how
 * much was cut, or the text itself when it fits.
 */
export function cutText(text: string, limitBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= limitBytes) return text;
  const head = Buffer.from(text, 'utf8').subarray(0, limitBytes).toString('utf8').replace(/\uFFFD$/, '');
  return `${head}\n[truncated: ${bytes - Buffer.byteLength(head, 'utf8')} more bytes]`;
}
