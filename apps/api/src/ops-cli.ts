import 'reflect-metadata';
import { type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConfigModule } from '#libs/config';
import { DatabaseModule, SchemaVersionError } from '#libs/database';
import { DomainError } from '#libs/errors';
import { EventsModule } from '#libs/events';
import { EngineModule } from '#libs/engine';
import { QueueModule } from '#libs/queue';
import { WebhookOutboxModule } from '#libs/webhooks';
import { FailTurn } from './ops/fail-turn.js';
import { QueueOperations } from './ops/queue-operations.js';
import { SessionInspection } from './ops/session-inspection.js';

@Module({ imports: [ConfigModule, DatabaseModule, EngineModule, EventsModule, QueueModule, WebhookOutboxModule], providers: [SessionInspection, QueueOperations, FailTurn] })
class OpsModule {}

const USAGE = `usage: npm run -s ops -- <command>   (or node dist/apps/api/src/ops-cli.js <command>; DATABASE_URL and REDIS_URL from the environment)
  session <session_id>                 the session's queue (pending inputs), latest turns, runs and leases
  unpause <session_id>                 resume a paused queue and nudge dispatch
  fail-turn <turn_id> [--reason TEXT]  end a stuck active turn failed (operator_failed)
  redispatch <session_id>              nudge the session's queue (and a run waiting for a worker)
Prints one JSON document; exit code 0, 1 on an error ({"error": …}), 2 on a usage error.`;

class UsageError extends Error {}

/** A parsed command: it asks the application for the one class that performs it. */
type Command = (app: INestApplicationContext) => Promise<object>;

function parse(argv: string[]): Command {
  const [command, id, ...rest] = argv;
  if (!command || command === 'help' || command === '--help') throw new UsageError('');
  if (!id) throw new UsageError(`${command} needs an id`);
  let reason: string | undefined;
  for (let i = 0; i < rest.length; i += 1) {
    const arg = rest[i]!;
    if (command === 'fail-turn' && arg === '--reason' && rest[i + 1] !== undefined) reason = rest[++i];
    else if (command === 'fail-turn' && arg.startsWith('--reason=')) reason = arg.slice('--reason='.length);
    else throw new UsageError(`unexpected argument ${arg}`);
  }
  switch (command) {
    case 'session':
      return (app) => app.get(SessionInspection).session(id);
    case 'unpause':
      return (app) => app.get(QueueOperations).unpause(id);
    case 'fail-turn':
      return (app) => app.get(FailTurn).execute(id, reason);
    case 'redispatch':
      return (app) => app.get(QueueOperations).redispatch(id);
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

/** Operator commands over the database and Redis of a deployment (see README, Operations). */
async function main(argv: string[]): Promise<number> {
  let command: Command;
  try {
    command = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (error.message) process.stderr.write(`${error.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const app = await NestFactory.createApplicationContext(OpsModule, { logger: ['error'], abortOnError: false });
  try {
    await print(await command(app));
    return 0;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    await print({ error: { code: error.code, message: error.message } });
    return 1;
  } finally {
    await app.close();
  }
}

function print(document: object): Promise<void> {
  return new Promise((resolve) => process.stdout.write(`${JSON.stringify(document, null, 2)}\n`, () => resolve()));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  async (error: unknown) => {
    // A database schema this build does not know: nothing was read or written (README, Operations).
    const code = error instanceof SchemaVersionError ? 'schema_version_mismatch' : 'internal_error';
    await print({ error: { code, message: error instanceof Error ? error.message : String(error) } });
    process.exit(1);
  },
);
