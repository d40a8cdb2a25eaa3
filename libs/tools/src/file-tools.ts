import { OCR_MAX_CHARS, OCR_MAX_PAGES, PDF_MAX_PAGES } from '#libs/files';
import type { ToolOutcome, WorkdirFiles } from './tool.types.js';

/** The most text one read_file call returns (the model's context is the limit that matters). */
export const MAX_READ_CHARS = 100_000;

/** `list_files`: the session workdir's files as JSON. */
export async function listFiles(files: WorkdirFiles, sessionId: string): Promise<ToolOutcome> {
  const listed = await files.list(sessionId);
  const output = listed.map((file) => ({ file_id: file.id, filename: file.filename, mime_type: file.mimeType, bytes: file.bytes }));
  return { success: true, output: JSON.stringify({ files: output }) };
}

/** `read_file`: a workdir file's text (a PDF's page by page), cut at MAX_READ_CHARS. */
export async function readFile(files: WorkdirFiles, sessionId: string, fileId: unknown, signal?: AbortSignal): Promise<ToolOutcome> {
  if (typeof fileId !== 'string') return { success: false, output: 'read_file error: file_id must be a string' };
  let read: Awaited<ReturnType<WorkdirFiles['readText']>>;
  try {
    read = await files.readText(sessionId, fileId, signal);
  } catch (error) {
    // A PDF that cannot be read within the reader's limits: the message says why, and retrying will not help.
    if (error instanceof Error && error.name === 'FileTextError') return { success: false, output: `read_file error: file ${fileId}: ${error.message}` };
    // A store that fails, or a file deleted meanwhile: the model may try again or go on without it.
    return { success: false, output: `read_file error: file ${fileId} could not be read now (${error instanceof Error ? error.name : 'error'})` };
  }
  if (!read) return { success: false, output: `read_file error: this session has no file ${fileId} (list_files shows its files)` };
  const { file, pages } = read;
  if (pages === null) return { success: false, output: `read_file error: ${file.filename} is ${file.mimeType}, which has no text to read` };
  const text = pages.length === 1 && file.mimeType !== 'application/pdf' ? pages[0]! : pages.map((page, index) => `[page ${index + 1}]\n${page}`).join('\n\n');
  const unread = (read.totalPages ?? pages.length) - pages.length;
  const cut = text.length > MAX_READ_CHARS ? `${text.slice(0, MAX_READ_CHARS)}\n[truncated: ${text.length - MAX_READ_CHARS} more characters]` : text;
  return { success: true, output: unread > 0 ? `${cut}\n[${unread} more pages not read: read_file reads at most the first ${PDF_MAX_PAGES} pages of a PDF, and stops once it has ${MAX_READ_CHARS} characters]` : cut };
}

/** Errors whose message says why a file cannot be read (retrying will not help). */
const UNREADABLE = new Set(['FileTextError', 'ImageTooLargeError', 'ImageUnreadableError']);

/** `ocr_parse_file`: like read_file, with OCR for images and scanned PDF pages (each page says where its text came from). */
export async function ocrParseFile(files: WorkdirFiles, sessionId: string, fileId: unknown, signal?: AbortSignal): Promise<ToolOutcome> {
  if (typeof fileId !== 'string') return { success: false, output: 'ocr_parse_file error: file_id must be a string' };
  let read: Awaited<ReturnType<WorkdirFiles['parse']>>;
  try {
    read = await files.parse(sessionId, fileId, signal);
  } catch (error) {
    if (error instanceof Error && UNREADABLE.has(error.name)) return { success: false, output: `ocr_parse_file error: file ${fileId}: ${error.message}` };
    return { success: false, output: `ocr_parse_file error: file ${fileId} could not be read now (${error instanceof Error ? error.name : 'error'})` };
  }
  if (!read) return { success: false, output: `ocr_parse_file error: this session has no file ${fileId} (list_files shows its files)` };
  const { file, pages } = read;
  if (pages === null) return { success: false, output: `ocr_parse_file error: ${file.filename} is ${file.mimeType}, which has no text or image to read` };
  const text =
    pages.length === 1 && file.mimeType !== 'application/pdf'
      ? pages[0]!.text
      : pages.map((page, index) => `[page ${index + 1}${page.source === 'ocr' ? ', OCR' : ''}]\n${page.text}`).join('\n\n');
  const cut = text.length > MAX_READ_CHARS ? `${text.slice(0, MAX_READ_CHARS)}\n[truncated: ${text.length - MAX_READ_CHARS} more characters]` : text;
  const notes = [
    read.totalPages > pages.length ? `${read.totalPages - pages.length} more pages not read (at most the first ${PDF_MAX_PAGES})` : '',
    read.pagesNotRecognised > 0 ? `${read.pagesNotRecognised} scanned pages not recognised (OCR reads at most ${OCR_MAX_PAGES} scanned pages, ${OCR_MAX_CHARS} characters)` : '',
  ].filter(Boolean);
  return { success: true, output: notes.length > 0 ? `${cut}\n[${notes.join('; ')}]` : cut };
}
