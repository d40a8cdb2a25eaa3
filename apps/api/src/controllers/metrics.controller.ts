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
  @ApiOperation({
    operationId: 'getMetrics',
    summary: 'Prometheus metrics',
    description: 'The metrics of this api process in the Prometheus text exposition format (see docs/metrics.md); the worker serves its own on WORKER_HEALTH_PORT.',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({
    schema: { type: 'string' },
    description: 'The metrics, text exposition format 0.0.4.',
    example:
      '# HELP yuxi_http_requests_total HTTP requests answered, by method, route pattern and status\n# TYPE yuxi_http_requests_total counter\nyuxi_http_requests_total{method="GET",route="/health",status="200"} 3\n',
  })
  async scrape(@Res() res: Response): Promise<void> {
    const body = await this.metrics.scrape();
    res.setHeader('Content-Type', this.metrics.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.send(body);
  }
}
