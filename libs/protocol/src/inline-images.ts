import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError, type FieldError } from '#libs/errors';
import { checkInlineImage, type DecodedImage, sessionFileUrl, StoreInlineImages } from '#libs/files';
import type { InputContentBlock, InputMessage } from '#libs/engine';
import { parseDataImageUrl } from './input-parser.js';
import type { Staging } from './use-cases/acceptance.js';

/** Where an inline image sits in the submitted messages, and its declared type (`png`, `jpeg`, …). */
interface ImageAt {
  message: number;
  block: number;
  declared: string;
}

/**
 * The inline images of one submission, decoded and checked, on their way to becoming session
 * files. The stored input (and so the user items and their events) refers to each image by
 * `file_id` with `image_url` = the path of its bytes, instead of carrying the data URL.
 */
export class InlineImageBatch {
  constructor(
    private readonly store: StoreInlineImages,
    private readonly ownerId: string,
    private readonly quota: { sessionId: string | null },
    private readonly messages: InputMessage[],
    private readonly positions: ImageAt[],
    private readonly images: DecodedImage[],
    readonly fileIds: string[],
  ) {}

  /** What Acceptance runs around its transaction; undefined when there is nothing to store. */
  get staging(): Staging | undefined {
    const store = this.store;
    if (this.images.length === 0) return undefined;
    return { stage: () => store.stage(this.ownerId, this.fileIds, this.images, this.quota), discard: () => store.discard(this.fileIds) };
  }

  /**
   * The messages as the idempotency intent holds them: each inline image as its declared type and
   * the SHA-256 of its bytes instead of its data URL. The same submission hashes the same, another
   * image under the same key does not, and hashing never serialises the (up to 96 MiB of) data URLs.
   */
  intentMessages(): unknown[] {
    if (this.positions.length === 0) return this.messages;
    const images = new Map(this.positions.map((at, index) => [`${at.message}:${at.block}`, { declared: at.declared, sha256: this.images[index]!.sha256 }]));
    return this.messages.map((message, m) => ({
      ...message,
      content: message.content.map((block, b) => {
        const image = images.get(`${m}:${b}`);
        return image ? { type: 'input_image', image_type: image.declared, image_sha256: image.sha256 } : block;
      }),
    }));
  }

  /** The messages as stored: every inline image replaced by a reference to its session file. */
  messagesFor(sessionId: string): InputMessage[] {
    if (this.positions.length === 0) return this.messages;
    const refs = new Map(this.positions.map((at, index) => [`${at.message}:${at.block}`, this.fileIds[index]!]));
    return this.messages.map((message, m) => ({
      ...message,
      content: message.content.map((block, b): InputContentBlock => {
        const fileId = refs.get(`${m}:${b}`);
        return fileId ? { type: 'input_image', file_id: fileId, image_url: sessionFileUrl(sessionId, fileId) } : block;
      }),
    }));
  }

  /** In the accepting transaction, after the input was written. */
  async bind(manager: EntityManager, sessionId: string, inputId: string): Promise<void> {
    if (this.fileIds.length > 0) await this.store.bind(manager, this.ownerId, this.fileIds, sessionId, inputId);
  }
}

/** Decodes the inline images of parsed messages and checks each one's bytes against its declared type (422 otherwise). */
@Injectable()
export class InlineImages {
  constructor(private readonly store: StoreInlineImages) {}

  /** `fieldPrefix`: where the messages sit in the request body (`input`, `events[0].input`), for error paths. */
  /**
   * `owner`: who the images belong to (their account's file quota counts them), and the session
   * they join (null: one being created).
   */
  async decode(owner: { ownerId: string; sessionId: string | null }, messages: InputMessage[], fieldPrefix: string): Promise<InlineImageBatch> {
    const { ownerId, ...quota } = owner;
    const positions: ImageAt[] = [];
    const images: DecodedImage[] = [];
    const errors: FieldError[] = [];
    for (const [m, message] of messages.entries()) {
      for (const [b, block] of message.content.entries()) {
        if (block.type !== 'input_image') continue;
        const parsed = parseDataImageUrl(block.image_url);
        // The parser accepted only data URLs; anything else never reaches here.
        if (!parsed) continue;
        const bytes = Buffer.from(parsed.base64, 'base64');
        const check = await checkInlineImage(bytes, parsed.subtype);
        if (!check.ok) {
          errors.push({ field: `${fieldPrefix}[${m}].content[${b}].image_url`, errors: [check.message] });
          continue;
        }
        positions.push({ message: m, block: b, declared: parsed.subtype });
        images.push({ bytes, mimeType: check.mimeType, sha256: createHash('sha256').update(bytes).digest('hex') });
      }
    }
    if (errors.length > 0) throw DomainError.validation(errors);
    return new InlineImageBatch(this.store, ownerId, quota, messages, positions, images, StoreInlineImages.newIds(images.length));
  }
}
