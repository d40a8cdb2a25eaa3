import { Inject, Injectable } from '@nestjs/common';
import { assertUserToken, type Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import type { FileEntity } from '../file.entity.js';
import { FilesRepository } from '../files.repository.js';
import { FileParser, IMAGE_TYPES } from '../ocr/file-parser.js';
import { ImageTooLargeError, thumbnail } from '../ocr/image-pixels.js';
import { type CreateThumbnailDto, type ParsedFileDto, THUMBNAIL_DEFAULT_SIDE, type ThumbnailDto } from '../ocr/ocr.dto.js';
import { FILE_STORAGE, type FileStorage } from '../storage/file-storage.js';
import { FileTextError } from '../text/pdf-text.js';
import { PrincipalWorkLimit } from './principal-work-limit.js';

/**
 * The caller's draft and its bytes, for the product's private routes (user tokens only). An
 * attached file belongs to its session's workdir now (pre-parse no longer takes it: 409).
 */
async function ownedDraft(files: FilesRepository, storage: FileStorage, principal: Principal, fileId: string): Promise<{ file: FileEntity; bytes: Buffer }> {
  assertUserToken(principal);
  const file = await files.findOwned(principal.userId, fileId);
  if (!file) throw DomainError.notFound(`File ${fileId}`);
  if (file.status !== 'draft' || !file.draftKey) {
    throw new DomainError('file_already_bound', `File ${fileId} is attached to a session input; its agent reads it with its file tools`, { file_id: fileId });
  }
  return { file, bytes: await storage.get(file.draftKey) };
}

/** The library's errors as the catalogue's codes (their messages are written to be shown). */
function parseError(error: unknown): unknown {
  if (error instanceof ImageTooLargeError) {
    return new DomainError('image_too_large', error.message, { width: error.width, height: error.height, limit_pixels: error.limitPixels });
  }
  // A busy reader is no fault of the file: retryable, unlike a file that cannot be read.
  if (error instanceof FileTextError && error.busy) return new DomainError('service_unavailable', error.message);
  if (error instanceof Error && (error.name === 'FileTextError' || error.name === 'ImageUnreadableError')) return new DomainError('file_unreadable', error.message);
  return error;
}

/** `POST /api/agent/files/{file_id}/parse`: a draft's text, page by page, OCR for images and scanned PDF pages. */
@Injectable()
export class ParseDraftFile {
  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    private readonly parser: FileParser,
    private readonly limit: PrincipalWorkLimit,
  ) {}

  execute(principal: Principal, fileId: string, signal?: AbortSignal): Promise<ParsedFileDto> {
    assertUserToken(principal);
    return this.limit.run(principal.userId, () => this.parse(principal, fileId, signal));
  }

  private async parse(principal: Principal, fileId: string, signal?: AbortSignal): Promise<ParsedFileDto> {
    const { file, bytes } = await ownedDraft(this.files, this.storage, principal, fileId);
    const parsed = await this.parser.parse(bytes, file.mimeType, signal).catch((error: unknown) => {
      throw parseError(error);
    });
    // Every accepted upload type has text or an image; a null would be a new type not taught here.
    if (!parsed) throw new DomainError('file_unreadable', `Files of type ${file.mimeType} have no text to parse`);
    return {
      object: 'file.parse',
      file_id: file.id,
      mime_type: file.mimeType,
      pages: parsed.pages.map((page, index) => ({ page: index + 1, text: page.text, source: page.source })),
      total_pages: parsed.totalPages,
      pages_not_recognised: parsed.pagesNotRecognised,
    };
  }
}

/** `POST /api/agent/images`: a WebP thumbnail of a draft image. */
@Injectable()
export class CreateThumbnail {
  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    private readonly limit: PrincipalWorkLimit,
  ) {}

  execute(principal: Principal, dto: CreateThumbnailDto): Promise<ThumbnailDto> {
    assertUserToken(principal);
    return this.limit.run(principal.userId, () => this.make(principal, dto));
  }

  private async make(principal: Principal, dto: CreateThumbnailDto): Promise<ThumbnailDto> {
    const { file, bytes } = await ownedDraft(this.files, this.storage, principal, dto.file_id);
    if (!IMAGE_TYPES.has(file.mimeType)) {
      throw new DomainError('file_type_not_allowed', `File ${file.id} is ${file.mimeType}, not an image (PNG, JPEG, GIF or WebP)`, { detected_type: file.mimeType });
    }
    const made = await thumbnail(bytes, dto.width ?? THUMBNAIL_DEFAULT_SIDE, dto.height ?? THUMBNAIL_DEFAULT_SIDE).catch((error: unknown) => {
      throw parseError(error);
    });
    return {
      object: 'image.thumbnail',
      file_id: file.id,
      mime_type: made.mimeType,
      width: made.width,
      height: made.height,
      bytes: made.bytes.length,
      data_url: `data:${made.mimeType};base64,${made.bytes.toString('base64')}`,
    };
  }
}
