import { Controller, Delete, Get, Param, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { AttachmentDeletedDto, AttachmentListDto } from '#libs/files';
import { DeleteAttachment, ListQueryDto, SessionQueriesService } from '#libs/protocol';
import { ApiErrors } from './api-errors.decorator.js';

const FILE_ID_PARAM = { name: 'file_id', description: 'A file id (32 hexadecimal characters).', schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } } as const;
const TEXT_TYPES = /^(text\/|application\/json$)/;

/** The files of a session: its attachments and their bytes (the artifact URL). */
@ApiTags('files')
@ApiBearerAuth()
@Controller('api/v1/agents/sessions/:session_id')
export class SessionFilesController {
  constructor(
    private readonly queries: SessionQueriesService,
    private readonly deleteAttachment: DeleteAttachment,
  ) {}

  @Get('attachments')
  @ApiOperation({
    operationId: 'listAttachments',
    summary: 'List the attachments of a session',
    description:
      'The formal file references of the session workdir: each attached file with the input that attached it, the user message it is bound to once that input was consumed, its preparation status and its artifact URL. Ordered by attachment time, then id; cursor pages like every list.',
  })
  @ApiOkResponse({ type: AttachmentListDto })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  list(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ListQueryDto): Promise<AttachmentListDto> {
    return this.queries.listAttachments(principal, sessionId, { after: query.after, limit: query.limit ?? 20, order: query.order ?? 'desc' });
  }

  @Delete('attachments/:file_id')
  @ApiOperation({
    operationId: 'deleteAttachment',
    summary: 'Delete an attachment of a session',
    description:
      'Removes the attachment\'s record and its bytes; history keeps no placeholder and the input\'s `attachment_file_ids` stay as received. Refused (409 `attachment_busy`) while its preparation is unfinished, while the input it belongs to is pending, or while a turn of the session is active.',
  })
  @ApiParam(FILE_ID_PARAM)
  @ApiOkResponse({ type: AttachmentDeletedDto })
  @ApiErrors('not_found', 'attachment_busy')
  delete(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('file_id') fileId: string): Promise<AttachmentDeletedDto> {
    return this.deleteAttachment.execute(principal, sessionId, fileId);
  }

  @Get('files/:file_id/content')
  @ApiOperation({
    operationId: 'getSessionFileContent',
    summary: 'Download a file of the session workdir (an attachment\'s artifact URL)',
    description:
      'The bytes as stored, with the detected `Content-Type`, `Content-Disposition: attachment` (the sanitised filename), `ETag` (the SHA-256) and `X-Content-Type-Options: nosniff`. Authorised like the session. A file still being prepared is 409 `file_not_ready`.',
  })
  @ApiParam(FILE_ID_PARAM)
  @ApiProduces('application/octet-stream')
  @ApiOkResponse({ description: 'The file\'s bytes.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } })
  @ApiErrors('not_found', 'file_not_ready')
  async content(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('file_id') fileId: string, @Res() res: Response): Promise<void> {
    const { file, bytes } = await this.queries.fileContent(principal, sessionId, fileId);
    res.status(200);
    res.setHeader('Content-Type', TEXT_TYPES.test(file.mimeType) ? `${file.mimeType}; charset=utf-8` : file.mimeType);
    res.setHeader('Content-Length', String(bytes.length));
    res.setHeader('Content-Disposition', contentDisposition(file.filename));
    res.setHeader('ETag', `"${file.sha256}"`);
    res.setHeader('Cache-Control', 'private, no-cache');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Never rendered as a page of this origin, whatever a browser makes of the bytes.
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    res.end(bytes);
  }
}

/** `attachment` with an ASCII fallback name and the UTF-8 name (RFC 6266 / 8187). */
function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
