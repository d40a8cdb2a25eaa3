import 'reflect-metadata';
import { createServer } from 'node:http';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppConfig, closeOnSignals } from '#libs/config';
import { WorkerModule } from './worker.module.js';

/** The worker: an application context (no HTTP API) plus a tiny health endpoint for orchestrators. */
async function bootstrap(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { bufferLogs: false });
  const config = app.get(AppConfig);
  if (config.workerHealthPort > 0) {
    const health = createServer((req, res) => {
      const ok = req.url === '/health';
      res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { status: 'ok' } : { error: 'not found' }));
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
