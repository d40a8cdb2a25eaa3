import { ApiProperty } from '@nestjs/swagger';

const TRACE_ID_EXAMPLE = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const SESSION_ID_EXAMPLE = '0190a1b2-c3d4-7e5f-8a9b-aaaaaaaaaaaa';

export class SessionTraceExtensionsDto {
  @ApiProperty({
    description:
      'True when this trace alone is larger than the response bound (16 MiB): `otlp` then holds its spans that fit, earliest first, and the rest are left out (no later page has them). False otherwise: a trace that retention (`TRACE_RETENTION_S`) removed in part is served with the spans that remain, `truncated` false.',
    example: false,
  })
  truncated!: boolean;
}

/** One turn's trace (the upstream `agent.session.trace`). */
export class SessionTraceDto {
  @ApiProperty({ format: 'uuid', description: 'The turn the trace belongs to (the root turn id upstream); the pagination anchor.', example: TRACE_ID_EXAMPLE }) id!: string;
  @ApiProperty({ enum: ['agent.session.trace'] }) object!: 'agent.session.trace';
  @ApiProperty({ format: 'uuid', description: 'The session that owns the trace.', example: SESSION_ID_EXAMPLE }) session_id!: string;
  @ApiProperty({ description: 'When the turn was created, Unix seconds.', example: 1791504000 }) created_at!: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'An OTLP JSON ExportTraceServiceRequest (`{resourceSpans: [{resource, scopeSpans: [{scope, spans}]}]}`, the OTLP/HTTP JSON encoding: ids as lowercase hex, times as Unix nanoseconds in strings, attribute values as AnyValue objects) holding the spans of the turn\'s trace that this session stored and that are the turn\'s (`yuxi.turn_id`: the worker\'s `claim`, `invoke_agent`, `chat`, `execute_tool`, `commit_step`, `compaction`, `sandbox.exec` spans, the `webhook.deliver` attempts of the turn\'s events), the `accept_input` spans of the inputs its runs consumed, and their parents (the api\'s request that sent the input, an `automation.fire`): turns sharing a trace each show their own. Only the spans exported so far (within a second or so of their end) are here; later ones are not awaited. Spans that retention (`TRACE_RETENTION_S`) deleted are not: a trace is served with what remains.',
    example: { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'yuxi-worker' } }] }, scopeSpans: [{ scope: { name: 'yuxi-agents-sessions' }, spans: [] }] }] },
  })
  otlp!: Record<string, unknown>;
  @ApiProperty({ type: SessionTraceExtensionsDto }) yuxi!: SessionTraceExtensionsDto;
}

export class SessionTraceListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [SessionTraceDto] }) data!: SessionTraceDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The last entry\'s id, the `after` of the next page (of an empty page with `has_more` true: the last turn it looked at).' }) last_id!: string | null;
  @ApiProperty({ description: 'More traces may follow (after `last_id`): the page reached `limit` or the 16 MiB bound, or it looked at 1,000 traced turns without finding `limit` with stored spans (turns whose spans are gone are skipped), so a page may hold fewer than `limit` entries while this is true. A page is empty while this is true only after 10,000 turns without spans; `last_id` is then the last turn looked at, the cursor to go on from.' }) has_more!: boolean;
}
