import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { PublicRoute } from '#libs/auth';
import { EventOutbox } from '#libs/events';
import { Metrics } from '#libs/metrics';

/** Prometheus scrape endpoint (text format), public like /health: the auth middleware guards /api/* only. */
@ApiTags('operations')
@PublicRoute()
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: Metrics,
    outbox: EventOutbox,
  ) {
    metrics.setRelayLagSource(() => outbox.relayLagSeconds());
  }

  @Get()
  @ApiOperation({ summary: 'Prometheus metrics of this api process (text exposition format; see docs/metrics.md)' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ schema: { type: 'string' } })
  async scrape(@Res() res: Response): Promise<void> {
    const body = await this.metrics.scrape();
    res.setHeader('Content-Type', this.metrics.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.send(body);
  }
}
