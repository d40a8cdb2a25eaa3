import { Controller, Delete, Get, Headers, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { DeleteFile, FileDeletedDto, FileDto, GetFile } from '#libs/files';
import { UploadDraft } from '#libs/protocol';
import { ApiErrors } from './api-errors.decorator.js';
import { receiveUpload, UPLOAD_FIELD } from './multipart-upload.js';
import { sendIdempotent } from './send-idempotent.js';

const FILE_ID_PARAM = { name: 'file_id', description: 'A file id (32 hexadecimal characters).', schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } } as const;

@ApiTags('files')
@ApiBearerAuth()
@Controller('api/v1/agents/files')
export class FilesController {
  constructor(
    private readonly uploadDraft: UploadDraft,
    private readonly getFile: GetFile,
    private readonly deleteFile: DeleteFile,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'uploadFile',
    summary: 'Upload a file as a draft',
    description:
      'multipart/form-data with one file in the field `file`, at most 5 MiB. The type is detected from the bytes (the part\'s Content-Type is ignored) and must be an accepted one: PNG, JPEG, GIF or WebP images, PDF, or UTF-8 text (.txt, .md, .csv, .tsv, .json, .log); an extension must match the content. The filename is sanitised. The draft creates no session and touches no workdir or history: attach it within 24 h (FILE_DRAFT_TTL_S) with `yuxi.attachment_file_ids` on a session create or a message, or it is deleted. With an `Idempotency-Key`, a retry of the same upload (same bytes, same filename) returns the first draft instead of a second one.',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      '1–128 characters, one per logical upload. A retry with the same key, the same bytes and the same filename returns the first response byte for byte (`Idempotent-Replayed: true`); the same key with other bytes or another filename is 409 `idempotency_conflict`. Omitted: every upload makes a new draft.',
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({
    schema: {
      type: 'object',
      required: [UPLOAD_FIELD],
      properties: { [UPLOAD_FIELD]: { type: 'string', format: 'binary', description: 'The file (at most 5 MiB).' } },
    },
  })
  @ApiCreatedResponse({ type: FileDto, description: 'The draft.' })
  @ApiErrors('validation_failed', 'file_too_large', 'file_quota_exceeded', 'file_type_not_allowed', 'file_type_mismatch', 'unsupported_media_type', 'idempotency_key_required', 'idempotency_conflict', 'too_many_large_bodies')
  async upload(@CurrentPrincipal() principal: Principal, @Headers('idempotency-key') key: string | undefined, @Req() req: Request, @Res() res: Response): Promise<void> {
    sendIdempotent(res, await this.uploadDraft.execute(principal, await receiveUpload(req, res), key));
  }

  @Get(':file_id')
  @ApiOperation({ operationId: 'getFile', summary: 'Read a draft', description: 'A file attached to a session is no longer a draft: 409 here, read it through the session\'s attachments.' })
  @ApiParam(FILE_ID_PARAM)
  @ApiOkResponse({ type: FileDto })
  @ApiErrors('not_found', 'file_already_bound')
  get(@CurrentPrincipal() principal: Principal, @Param('file_id') fileId: string): Promise<FileDto> {
    return this.getFile.execute(principal, fileId);
  }

  @Delete(':file_id')
  @ApiOperation({
    operationId: 'deleteFile',
    summary: 'Delete a draft',
    description: 'Removes an unattached draft and its bytes. An attached file is deleted through its session (`DELETE …/sessions/{session_id}/attachments/{file_id}`): 409 here.',
  })
  @ApiParam(FILE_ID_PARAM)
  @ApiOkResponse({ type: FileDeletedDto })
  @ApiErrors('not_found', 'file_already_bound')
  delete(@CurrentPrincipal() principal: Principal, @Param('file_id') fileId: string): Promise<FileDeletedDto> {
    return this.deleteFile.execute(principal, fileId);
  }
}
