import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { ListQueryDto, ListSessionTraces } from '#libs/protocol';
import { SessionTraceListDto } from '#libs/traces';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { ApiSessionId } from './api-params.js';

/** The traces of a session: its turns' spans as OTLP JSON, read with no collector (the upstream shape). */
@ApiTags(TAGS.turns.name)
@ApiBearerAuth()
@Controller('api/v1/agents/sessions/:session_id/traces')
export class SessionTracesController {
  constructor(private readonly listTraces: ListSessionTraces) {}

  @Get()
  @ApiOperation({
    operationId: 'listSessionTraces',
    summary: 'List the traces of a session',
    description:
      'One entry per turn of the session (its own turns, not a fork\'s inherited ones) whose trace has stored spans, ordered by the turn\'s position, newest first by default; cursor pages like every list (`after` is a turn id). `otlp` is an OTLP JSON ExportTraceServiceRequest of the spans this server kept for the turn\'s trace: what was exported when the page was read (later spans are not awaited). Spans are kept only while tracing is on (`TRACING`, `OTEL_EXPORTER_OTLP_ENDPOINT`) and for `TRACE_RETENTION_S`; with tracing off the list is empty. A response is at most 16 MiB: a page stops before the trace that would pass it (`has_more` stays true), and a single trace larger than that is cut to its earliest spans that fit, with `yuxi.truncated: true`. Another caller\'s session is 404.',
  })
  @ApiSessionId()
  @ApiOkResponse({ type: SessionTraceListDto, description: 'One page of traces.' })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  list(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ListQueryDto): Promise<SessionTraceListDto> {
    return this.listTraces.execute(principal, sessionId, { after: query.after, limit: query.limit ?? 20, order: query.order ?? 'desc' });
  }
}
