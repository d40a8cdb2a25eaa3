import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { PublicRoute } from '#libs/auth';
import { EventOutbox } from '#libs/events';
import { Metrics } from '#libs/metrics';

/** Prometheus scrape endpoint (text format), public like /health: the auth middleware guards /api/* only. */
@ApiExcludeController()
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
  async scrape(@Res() res: Response): Promise<void> {
    const body = await this.metrics.scrape();
    res.setHeader('Content-Type', this.metrics.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.send(body);
  }
}
