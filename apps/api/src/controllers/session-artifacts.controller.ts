import { Controller, Delete, Get, Param, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { ArtifactDeletedDto, ArtifactDto, ArtifactListDto } from '#libs/environments';
import { ArtifactListQueryDto, DeleteArtifact, GetArtifact, GetArtifactContent, ListArtifacts } from '#libs/protocol';
import { ApiErrors } from './api-errors.decorator.js';

const ARTIFACT_ID_PARAM = { name: 'artifact_id', description: 'An artifact id of that session.', schema: { type: 'string', format: 'uuid' } } as const;

/** The artifacts of a session: the files its calls wrote in its environment, as they were then (the upstream shape). */
@ApiTags('sessions')
@ApiBearerAuth()
@Controller('api/v1/agents/sessions/:session_id/artifacts')
export class SessionArtifactsController {
  constructor(
    private readonly listArtifacts: ListArtifacts,
    private readonly getArtifact: GetArtifact,
    private readonly getContent: GetArtifactContent,
    private readonly deleteArtifact: DeleteArtifact,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listArtifacts',
    summary: 'List the artifacts of a session',
    description:
      'Every file a harness call of the session wrote (created or changed) in its environment, one artifact per write, with its absolute path (`/workspace/...`) and size as written. Newest first by default; cursor pages like every list. Another caller\'s session is 404.',
  })
  @ApiOkResponse({ type: ArtifactListDto })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  list(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ArtifactListQueryDto): Promise<ArtifactListDto> {
    return this.listArtifacts.execute(principal, sessionId, { after: query.after, limit: query.limit ?? 20, order: query.order ?? 'desc' }, query.environment_id);
  }

  @Get(':artifact_id')
  @ApiOperation({ operationId: 'getArtifact', summary: 'Get an artifact of a session', description: 'An artifact of another session, or of another caller\'s session, is 404.' })
  @ApiParam(ARTIFACT_ID_PARAM)
  @ApiOkResponse({ type: ArtifactDto })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('artifact_id') artifactId: string): Promise<ArtifactDto> {
    return this.getArtifact.execute(principal, sessionId, artifactId);
  }

  @Get(':artifact_id/content')
  @ApiOperation({
    operationId: 'getArtifactContent',
    summary: 'Download the bytes of an artifact',
    description: 'The file\'s bytes as the call wrote them (a later write of the same path is another artifact), as `application/octet-stream`, always as an attachment.',
  })
  @ApiParam(ARTIFACT_ID_PARAM)
  @ApiOkResponse({
    description: 'The bytes.',
    content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    headers: {
      'Content-Length': { description: 'Size in bytes.', schema: { type: 'integer' } },
      'Content-Disposition': { description: '`attachment`, with the file\'s name.', schema: { type: 'string' } },
      ETag: { description: 'The SHA-256 of the bytes.', schema: { type: 'string' } },
      'X-Content-Type-Options': { description: '`nosniff`: clients use the declared type.', schema: { type: 'string' } },
    },
  })
  @ApiErrors('not_found')
  async content(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('artifact_id') artifactId: string, @Res() res: Response): Promise<void> {
    const { artifact, stream } = await this.getContent.execute(principal, sessionId, artifactId);
    res.status(200);
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Length', String(artifact.sizeBytes));
    res.setHeader('Content-Disposition', attachment(artifact.path.slice(artifact.path.lastIndexOf('/') + 1)));
    res.setHeader('ETag', `"${artifact.sha256}"`);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    // Streamed, never held whole: a store failing mid-body cuts the connection.
    await pipeline(stream, res).catch(() => res.destroy());
  }

  @Delete(':artifact_id')
  @ApiOperation({
    operationId: 'deleteArtifact',
    summary: 'Delete an artifact of a session',
    description: 'Removes the artifact from the session\'s list; the file in the workspace (and the workspace\'s versions holding it) stay.',
  })
  @ApiParam(ARTIFACT_ID_PARAM)
  @ApiOkResponse({ type: ArtifactDeletedDto })
  @ApiErrors('not_found')
  delete(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('artifact_id') artifactId: string): Promise<ArtifactDeletedDto> {
    return this.deleteArtifact.execute(principal, sessionId, artifactId);
  }
}

/** The disposition with an ASCII fallback name and the UTF-8 name (RFC 6266 / 8187). */
function attachment(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
