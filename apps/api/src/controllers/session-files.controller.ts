import { Controller, Delete, Get, Param, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { AttachmentDeletedDto, AttachmentListDto } from '#libs/files';
import { DeleteAttachment, ListQueryDto, ReadSessionFile, SessionQueriesService } from '#libs/protocol';
import { ApiErrors } from './api-errors.decorator.js';

const FILE_ID_PARAM = { name: 'file_id', description: 'A file id of that session (32 hexadecimal characters).', schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } } as const;
const TEXT_TYPES = /^(text\/|application\/json$)/;
/** The types a session file can have (sniffed from its bytes when it was stored). */
const CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', 'text/plain', 'text/markdown', 'text/csv', 'text/tab-separated-values', 'application/json'];
const BINARY = { schema: { type: 'string', format: 'binary' } };

/** The files of a session: its attachments, and the bytes of its files (attachments, inline images, images tools returned). */
@ApiTags('files')
@ApiBearerAuth()
@Controller('api/v1/agents/sessions/:session_id')
export class SessionFilesController {
  constructor(
    private readonly queries: SessionQueriesService,
    private readonly deleteAttachment: DeleteAttachment,
    private readonly getContent: ReadSessionFile,
  ) {}

  @Get('attachments')
  @ApiOperation({
    operationId: 'listAttachments',
    summary: 'List the attachments of a session',
    description:
      'The formal file references of the session workdir: each attached file with the input that attached it, the user message it is bound to once that input was consumed, its preparation status and its artifact URL. Ordered by attachment time, then id; cursor pages like every list. Inline images of messages are not attachments.',
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
      'Removes the attachment\'s record and its bytes; history keeps no placeholder and the input\'s `attachment_file_ids` stay as received. Refused (409 `attachment_busy`) while its preparation is unfinished, while the input it belongs to is pending, or while a turn of the session is active. Cancelling an input keeps its files, and their preparation still finishes (it is retried with growing intervals, up to 5 minutes apart); the file of a cancelled input may be deleted before its preparation finished, which gives the preparation up (for a preparation that cannot finish, e.g. its upload was lost, this frees the file and the owner\'s quota).',
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
    summary: 'Download the bytes of a session file',
    description:
      'The bytes of a file of the session: an attachment once it is in the session workdir (its artifact URL), an inline image of a user message, or an image a tool returned (a `function_call_output` item\'s `yuxi.file_ids`). Inline images (`input_image` blocks sent as `data:` URLs) are stored as session files when their submission is accepted; inputs, items and their events then carry `{"type":"input_image","file_id","image_url"}` where `image_url` is this path. Authorised like the session: another caller\'s session, and a file of another session, are 404. An attachment still being prepared is 409 `file_not_ready`. The Content-Type is the type detected from the bytes when the file was stored.',
  })
  @ApiParam(FILE_ID_PARAM)
  @ApiOkResponse({
    description: 'The file\'s bytes, exactly as stored.',
    content: Object.fromEntries(CONTENT_TYPES.map((type) => [type, BINARY])),
    headers: {
      'Content-Length': { description: 'Size in bytes.', schema: { type: 'integer' } },
      'Content-Disposition': { description: '`inline` for images, `attachment` otherwise, with the sanitised filename.', schema: { type: 'string' } },
      ETag: { description: 'The SHA-256 of the bytes.', schema: { type: 'string' } },
      'Cache-Control': { description: '`no-store`, as every API response: only the session\'s owner may read the bytes, so no browser or proxy keeps them.', schema: { type: 'string' } },
      'X-Content-Type-Options': { description: '`nosniff`: clients use the declared type.', schema: { type: 'string' } },
    },
  })
  @ApiErrors('not_found', 'file_not_ready')
  async content(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('file_id') fileId: string, @Res() res: Response): Promise<void> {
    const { file, stream } = await this.getContent.execute(principal, sessionId, fileId);
    res.status(200);
    res.setHeader('Content-Type', TEXT_TYPES.test(file.mimeType) ? `${file.mimeType}; charset=utf-8` : file.mimeType);
    // The row's size: the stored object was written from exactly these bytes (its SHA-256 is the ETag).
    res.setHeader('Content-Length', String(file.bytes));
    res.setHeader('Content-Disposition', contentDisposition(file.mimeType.startsWith('image/') ? 'inline' : 'attachment', file.filename));
    res.setHeader('ETag', `"${file.sha256}"`);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Never rendered as a page of this origin, whatever a browser makes of the bytes.
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    // Streamed, never held whole: a store failing mid-body cuts the connection (the status is sent),
    // and a client leaving stops the read.
    await pipeline(stream, res).catch(() => res.destroy());
  }
}

/** The disposition with an ASCII fallback name and the UTF-8 name (RFC 6266 / 8187). */
function contentDisposition(kind: 'inline' | 'attachment', filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
