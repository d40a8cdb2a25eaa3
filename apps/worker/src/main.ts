import 'reflect-metadata';
import { createServer } from 'node:http';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoNestLogger } from 'nestjs-pino';
import { AppConfig, closeOnSignals } from '#libs/config';
import { serveMetrics } from '#libs/metrics';
import { FencingStats, WORKER_ID } from '#libs/runtime';
import { WorkerModule } from './worker.module.js';

/** The worker: an application context (no HTTP API) plus a tiny health endpoint for orchestrators. */
async function bootstrap(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { bufferLogs: true });
  app.useLogger(app.get(PinoNestLogger));
  const config = app.get(AppConfig);
  if (config.workerHealthPort > 0) {
    const stats = app.get(FencingStats);
    const health = createServer((req, res) => {
      if (req.url === '/metrics') return serveMetrics(res);
      const ok = req.url === '/health';
      const body = ok ? { status: 'ok', worker_id: WORKER_ID, fenced_writes: stats.fencedWrites, fenced_publishes: stats.fencedPublishes } : { error: 'not found' };
      res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    health.listen(config.workerHealthPort);
    closeOnSignals(app, () => health.close());
  } else {
    closeOnSignals(app);
  }
  new Logger('Worker').log(`worker ready${config.workerHealthPort > 0 ? `, health on :${config.workerHealthPort}/health` : ''}`);
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
