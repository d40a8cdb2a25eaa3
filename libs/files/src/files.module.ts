import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '#libs/config';
import { FileEntity } from './file.entity.js';
import { FilesRepository } from './files.repository.js';
import { FilesSweep } from './files-sweep.js';
import { SessionFiles } from './session-files.js';
import { FILE_STORAGE } from './storage/file-storage.js';
import { fileStorageProvider } from './storage/storage.provider.js';
import { DeleteFile, GetFile, UploadFile } from './use-cases/draft-files.use-case.js';
import { InlineImagesRepository } from './inline/inline-images.repository.js';
import { ResolveSessionImages, StoreInlineImages } from './use-cases/inline-images.use-case.js';
import { GetSessionFileContent } from './use-cases/session-file-content.use-case.js';
import { ToolImagesRepository } from './tool/tool-images.repository.js';
import { StoreToolImages } from './use-cases/tool-images.use-case.js';
import { PdfTextReader } from './text/pdf-text.js';
import { FileParser } from './ocr/file-parser.js';
import { OcrReader } from './ocr/ocr-text.js';
import { CreateThumbnail, ParseDraftFile } from './use-cases/ocr-routes.use-case.js';
import { PrincipalWorkLimit } from './use-cases/principal-work-limit.js';

/**
 * The readers: each a worker thread started on its first file only (the OCR engine, tesseract.js,
 * loads nothing in either process until an image is read).
 */
const READERS = [
  { provide: PdfTextReader, useFactory: () => new PdfTextReader() },
  { provide: OcrReader, inject: [AppConfig], useFactory: (config: AppConfig) => new OcrReader({ timeoutMs: config.ocrTimeoutMs }) },
  { provide: FileParser, inject: [PdfTextReader, OcrReader], useFactory: (pdf: PdfTextReader, ocr: OcrReader) => new FileParser(pdf, ocr) },
];

/** Inline images of messages, images of tool results, and the bytes of session files. */
const SESSION_FILES = [InlineImagesRepository, StoreInlineImages, ResolveSessionImages, GetSessionFileContent, ToolImagesRepository, StoreToolImages];

/** Files and their storage, shared by the api (uploads, drafts, attachments) and the worker (preparation, tools, the sweep). */
@Module({
  imports: [TypeOrmModule.forFeature([FileEntity])],
  providers: [
    ...READERS,
    { provide: PrincipalWorkLimit, inject: [AppConfig], useFactory: (config: AppConfig) => new PrincipalWorkLimit(config.fileWorkPerPrincipal) },
    ParseDraftFile, CreateThumbnail, FilesRepository, fileStorageProvider, UploadFile, GetFile, DeleteFile, FilesSweep, SessionFiles, ...SESSION_FILES],
  exports: [FilesRepository, FILE_STORAGE, UploadFile, GetFile, DeleteFile, ParseDraftFile, CreateThumbnail, FilesSweep, SessionFiles, ...SESSION_FILES],
})
export class FilesModule {}
