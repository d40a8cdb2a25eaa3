import type { Request, Response } from 'express';
import multer from 'multer';
import { DomainError } from '#libs/errors';
import { MAX_FILE_BYTES, type ReceivedUpload } from '#libs/files';

/** The one file field of `POST /files`. */
export const UPLOAD_FIELD = 'file';

// In memory (5 MiB at most): the bytes are sniffed and hashed before anything is stored. Filenames
// are read as UTF-8 and kept with their path, so the files lib's sanitiser is what removes it.
const single = multer({
  storage: multer.memoryStorage(),
  limits: { fileSize: MAX_FILE_BYTES, files: 1, fields: 8, parts: 9, fieldSize: 64 * 1024, headerPairs: 100 },
  defParamCharset: 'utf8',
  preservePath: true,
}).single(UPLOAD_FIELD);

/**
 * Reads the multipart body of an upload. Multer stops buffering at the size limit and drains the
 * rest of the request before the error is answered, so the client always reads the 413.
 */
export async function receiveUpload(req: Request, res: Response): Promise<ReceivedUpload> {
  if (!req.is('multipart/form-data')) throw new DomainError('unsupported_media_type', `Send the file as multipart/form-data in the field "${UPLOAD_FIELD}"`);
  await new Promise<void>((resolve, reject) => single(req, res, (error: unknown) => (error ? reject(toUploadError(error)) : resolve())));
  const file = req.file;
  if (!file) throw DomainError.validation([{ field: UPLOAD_FIELD, errors: [`a file is required in the multipart field "${UPLOAD_FIELD}"`] }]);
  return { originalName: file.originalname, bytes: file.buffer };
}

function toUploadError(error: unknown): DomainError {
  if (error instanceof multer.MulterError) {
    if (error.code === 'LIMIT_FILE_SIZE') return new DomainError('file_too_large', `The file exceeds ${MAX_FILE_BYTES} bytes`, { limit_bytes: MAX_FILE_BYTES });
    if (error.code === 'LIMIT_UNEXPECTED_FILE' || error.code === 'LIMIT_FILE_COUNT') {
      return DomainError.validation([{ field: error.field ?? UPLOAD_FIELD, errors: [`send exactly one file, in the field "${UPLOAD_FIELD}"`] }]);
    }
    return DomainError.validation([{ field: error.field ?? 'body', errors: [error.message] }]);
  }
  // busboy: a malformed body (no boundary, truncated parts).
  return DomainError.validation([{ field: 'body', errors: [`malformed multipart body: ${error instanceof Error ? error.message : String(error)}`] }]);
}
