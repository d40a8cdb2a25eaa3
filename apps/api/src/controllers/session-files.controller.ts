import { Controller, Get, Param, Res, StreamableFile } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { GetSessionFileContent } from '#libs/files';
import { ApiErrors } from './api-errors.decorator.js';

/** The types a session file can have (sniffed from its bytes when it was stored). */
const CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', 'text/plain', 'text/markdown', 'text/csv', 'text/tab-separated-values', 'application/json'];
const BINARY = { schema: { type: 'string', format: 'binary' } };

@ApiTags('files')
@ApiBearerAuth()
@Controller('api/v1/agents/sessions/:session_id/files')
export class SessionFilesController {
  constructor(private readonly getContent: GetSessionFileContent) {}

  @Get(':file_id/content')
  @ApiOperation({
    operationId: 'getSessionFileContent',
    summary: 'Download the bytes of a session file',
    description:
      'The bytes of a file of the session: an inline image of a user message, or an attachment once it is in the session workdir. Inline images (`input_image` blocks sent as `data:` URLs) are stored as session files when their submission is accepted; inputs, items and their events then carry `{"type":"input_image","file_id","image_url"}` where `image_url` is this path, instead of the data URL. Authorised like the session: another caller\'s session, and a file of another session, are 404. The Content-Type is the type detected from the bytes when the file was stored.',
  })
  @ApiParam({ name: 'session_id', description: 'The session.', schema: { type: 'string', format: 'uuid' } })
  @ApiParam({ name: 'file_id', description: 'A file id of that session (32 hexadecimal characters).', schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } })
  @ApiOkResponse({
    description: 'The file\'s bytes, exactly as stored.',
    content: Object.fromEntries(CONTENT_TYPES.map((type) => [type, BINARY])),
    headers: {
      'Content-Length': { description: 'Size in bytes.', schema: { type: 'integer' } },
      'Cache-Control': { description: '`private`: the bytes of a stored file never change, but only its session\'s owner may read them.', schema: { type: 'string' } },
      'X-Content-Type-Options': { description: '`nosniff`: clients use the declared type.', schema: { type: 'string' } },
    },
  })
  @ApiErrors('not_found')
  async content(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Param('file_id') fileId: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile> {
    const { file, bytes } = await this.getContent.execute(principal, sessionId, fileId);
    res.setHeader('Cache-Control', 'private');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    return new StreamableFile(bytes, { type: file.mimeType, length: bytes.length });
  }
}
