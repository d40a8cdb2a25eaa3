import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '#libs/config';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

/** What the deployment tells its console beyond the caller (`GET /api/v1/me`): settings of the server, the same for every caller. */
export class ConsoleSettingsDto {
  @ApiProperty({ enum: ['console.settings'] }) object!: 'console.settings';
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'TRACE_URL_TEMPLATE: a trace UI\'s address with `{trace_id}` in it (Jaeger, Grafana Tempo, Langfuse); the console links a turn\'s trace there, `{trace_id}` replaced by the turn\'s `yuxi.trace_id`. Null when not set.',
    example: 'https://jaeger.example.com/trace/{trace_id}',
  })
  trace_url_template!: string | null;
}

@ApiTags(TAGS.caller.name)
@ApiBearerAuth()
@Controller('api/v1/console/settings')
export class ConsoleSettingsController {
  constructor(private readonly config: AppConfig) {}

  @Get()
  @ApiOperation({
    operationId: 'getConsoleSettings',
    summary: 'The console\'s settings',
    description:
      'Settings of the deployment the console reads once signed in: where a trace opens (TRACE_URL_TEMPLATE). Any valid credential: they are the same for every caller, and name no secret (an operator sets only what every user may see, a trace UI\'s public address).',
  })
  @ApiOkResponse({ type: ConsoleSettingsDto, description: 'The settings.', example: { object: 'console.settings', trace_url_template: 'https://jaeger.example.com/trace/{trace_id}' } })
  @ApiErrors()
  get(): ConsoleSettingsDto {
    return { object: 'console.settings', trace_url_template: this.config.traceUrlTemplate === '' ? null : this.config.traceUrlTemplate };
  }
}
