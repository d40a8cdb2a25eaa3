import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppConfig, closeOnSignals, PinoNestLogger, startupLogger, startupProblem } from '#libs/config';
import { SchemaVersionError } from '#libs/database';
import { startTracing } from '#libs/telemetry';
import { metrics as processMetrics } from '#libs/metrics';
import { loadTokenizer } from '#libs/models';
import { type OpsRoutes, startOpsHttp } from './ops-http.js';
import { WorkerHealth } from './worker-health.js';
import { WorkerModule } from './worker.module.js';

/** The worker: an application context (no HTTP API) plus a tiny ops endpoint (health) for orchestrators. */
async function bootstrap(): Promise<void> {
  const problem = startupProblem('worker');
  if (problem) {
    console.error(problem);
    process.exit(1);
  }
  // Before the application exists, so every span it makes has the provider (off: the SDK is never loaded).
  await startTracing('worker');
  // The health port is bound before the application starts consuming: a second worker on a host
  // whose port is taken stops here, having claimed nothing, and says which setting to change.
  const healthPort = new AppConfig().workerHealthPort;
  let health: WorkerHealth | null = null;
  const starting = { status: 503, body: { status: 'starting' } };
  const routes: OpsRoutes = {
    '/health': () => health?.live() ?? starting,
    '/health/live': () => health?.live() ?? starting,
    '/health/ready': () => health?.ready() ?? starting,
    '/metrics': async () => ({ status: 200, body: await processMetrics.scrape(), contentType: processMetrics.contentType }),
  };
  const ops = healthPort > 0 ? await startOpsHttp(healthPort, routes).catch((error: unknown) => exitOnBindError(error, healthPort)) : null;
  // Items the worker writes are counted in tokens as they are written; the encoding (~0.3 s) loads
  // alongside the application. An item written before it is ready keeps a null count, which the
  // context builder counts when it reads the item.
  const tokenizer = loadTokenizer();
  // abortOnError false: a start-up failure (a database schema this build does not know) exits 1 with its message.
  const app = await NestFactory.createApplicationContext(WorkerModule, { bufferLogs: true, abortOnError: false, logger: startupLogger() });
  app.useLogger(app.get(PinoNestLogger));
  const config = app.get(AppConfig);
  if (ops) {
    health = app.get(WorkerHealth);
    closeOnSignals(app, () => ops.close());
  } else {
    closeOnSignals(app);
  }
  await tokenizer;
  new Logger('Worker').log(`worker ready${config.workerHealthPort > 0 ? `, health on :${config.workerHealthPort}/health/live and /health/ready` : ''}`);
}

/** A health port already taken (another worker on this host) or not ours to bind: one line that says what to do. */
function exitOnBindError(error: unknown, port: number): never {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    console.error(`worker cannot start: its health port ${port} is already in use (another worker on this host?). Give each worker on a host its own WORKER_HEALTH_PORT, or 0 for none.`);
  } else {
    console.error(`worker cannot start: the health port ${port} (WORKER_HEALTH_PORT) cannot be bound: ${(error as Error).message}`);
  }
  process.exit(1);
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof SchemaVersionError ? `refusing to start: ${error.message}` : error);
  process.exit(1);
});
