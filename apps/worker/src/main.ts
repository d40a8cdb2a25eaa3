import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppConfig, closeOnSignals, PinoNestLogger } from '#libs/config';
import { SchemaVersionError } from '#libs/database';
import { metrics as processMetrics } from '#libs/metrics';
import { loadTokenizer } from '#libs/models';
import { type OpsRoutes, startOpsHttp } from './ops-http.js';
import { WorkerHealth } from './worker-health.js';
import { WorkerModule } from './worker.module.js';

/** The worker: an application context (no HTTP API) plus a tiny ops endpoint (health) for orchestrators. */
async function bootstrap(): Promise<void> {
  // Items the worker writes are counted in tokens as they are written; the encoding (~0.3 s) loads
  // alongside the application. An item written before it is ready keeps a null count, which the
  // context builder counts when it reads the item.
  const tokenizer = loadTokenizer();
  // abortOnError false: a start-up failure (a database schema this build does not know) exits 1 with its message.
  const app = await NestFactory.createApplicationContext(WorkerModule, { bufferLogs: true, abortOnError: false });
  app.useLogger(app.get(PinoNestLogger));
  const config = app.get(AppConfig);
  if (config.workerHealthPort > 0) {
    const health = app.get(WorkerHealth);
    const routes: OpsRoutes = {
      '/health': () => health.live(),
      '/health/live': () => health.live(),
      '/health/ready': () => health.ready(),
      '/metrics': async () => ({ status: 200, body: await processMetrics.scrape(), contentType: processMetrics.contentType }),
    };
    const ops = await startOpsHttp(config.workerHealthPort, routes);
    closeOnSignals(app, () => ops.close());
  } else {
    closeOnSignals(app);
  }
  await tokenizer;
  new Logger('Worker').log(`worker ready${config.workerHealthPort > 0 ? `, health on :${config.workerHealthPort}/health/live and /health/ready` : ''}`);
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof SchemaVersionError ? `refusing to start: ${error.message}` : error);
  process.exit(1);
});
