import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppConfig, closeOnSignals, PinoNestLogger, startupLogger, startupProblem } from '#libs/config';
import { SchemaVersionError } from '#libs/database';
import { startTracing } from '#libs/telemetry';
import { AppModule } from './app.module.js';
import { configureHttp } from './http-setup.js';
import { mountOpenApi } from './openapi/openapi.js';

async function bootstrap(): Promise<void> {
  const problem = startupProblem('api');
  if (problem) {
    console.error(problem);
    process.exit(1);
  }
  // Before the application exists, so every span it makes has the provider (off: the SDK is never loaded).
  await startTracing('api');
  // forceCloseConnections: whatever the graceful drain (HttpDrain) left open is destroyed when the server closes.
  // abortOnError false: a start-up failure (a database schema this build does not know) reaches the
  // catch below and exits 1 with its message, instead of process.abort().
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { bodyParser: false, bufferLogs: true, forceCloseConnections: true, abortOnError: false, logger: startupLogger() });
  app.useLogger(app.get(PinoNestLogger));
  const config = app.get(AppConfig);
  // API responses are dynamic JSON: hashing each body for an ETag costs CPU on every read and no
  // client of this API revalidates with it. The framework banner header is noise.
  app.set('etag', false);
  app.disable('x-powered-by');
  // The client's address (failed-authentication throttling) behind the proxies TRUST_PROXY names.
  app.set('trust proxy', config.trustProxy);
  configureHttp(app, config.bodyLimit, config.maxConcurrentLargeBodies);
  mountOpenApi(app);
  closeOnSignals(app);
  await app.listen(config.port);
  new Logger('Api').log(`listening on :${config.port} (docs at /docs)`);
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof SchemaVersionError ? `refusing to start: ${error.message}` : error);
  process.exit(1);
});
