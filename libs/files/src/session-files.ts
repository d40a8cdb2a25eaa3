import { Inject, Injectable } from '@nestjs/common';
import type { FileEntity } from './file.entity.js';
import { FilesRepository } from './files.repository.js';
import { FILE_STORAGE, type FileStorage } from './storage/file-storage.js';
import { type FileText, fileTextPages } from './text/file-text.js';
import { PdfTextReader } from './text/pdf-text.js';
import { FileParser, type ParsedFile } from './ocr/file-parser.js';

/** How many files a listing of a workdir shows at most. */
const MAX_LISTED = 200;

/**
 * The files of a session's workdir, as its agent's tools see them: the ready files attached in any
 * session sharing the workdir (every session of a project; a session without one has its own). The
 * workdir is shared by the sessions' inputs: cancelling an input does not hide its files from the
 * tools.
 */
@Injectable()
export class SessionFiles {
  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    private readonly pdf: PdfTextReader,
    private readonly parser: FileParser,
  ) {}

  list(sessionId: string): Promise<FileEntity[]> {
    return this.files.readyInWorkdir(sessionId, MAX_LISTED);
  }

  /** A ready file of the session's workdir and its bytes; null when the workdir has no such file. */
  async read(sessionId: string, fileId: string): Promise<{ file: FileEntity; bytes: Buffer } | null> {
    const file = await this.files.readyInWorkdirById(sessionId, fileId);
    if (!file?.sessionKey) return null;
    return { file, bytes: await this.storage.get(file.sessionKey) };
  }

  /** The file's text by page (see fileTextPages); `text` is null for a kind without text. Rejects with FileTextError for an unreadable PDF. */
  async readText(sessionId: string, fileId: string, signal?: AbortSignal): Promise<{ file: FileEntity; text: FileText | null } | null> {
    const found = await this.read(sessionId, fileId);
    if (!found) return null;
    return { file: found.file, text: await fileTextPages(found.bytes, found.file.mimeType, this.pdf, signal) };
  }

  /**
   * The file's text with OCR (see FileParser: images, scanned PDF pages); `parsed` null for a kind
   * without either. Rejects with FileTextError, ImageTooLargeError or ImageUnreadableError.
   */
  async parse(sessionId: string, fileId: string, signal?: AbortSignal): Promise<{ file: FileEntity; parsed: ParsedFile | null } | null> {
    const found = await this.read(sessionId, fileId);
    if (!found) return null;
    return { file: found.file, parsed: await this.parser.parse(found.bytes, found.file.mimeType, signal) };
  }
}
