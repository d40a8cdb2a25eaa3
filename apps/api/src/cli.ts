import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AuthModule, AuthService } from '#libs/auth';
import { ConfigModule } from '#libs/config';
import { DatabaseModule } from '#libs/database';

@Module({ imports: [ConfigModule, DatabaseModule, AuthModule] })
class CliModule {}

const USAGE = 'usage: node dist/apps/api/src/cli.js create-key <user-name>';

/** Operator commands. `create-key <user>` prints a new full-scope key of that user (created if new). */
async function main(argv: string[]): Promise<void> {
  const [command, userName] = argv;
  if (command !== 'create-key' || !userName) throw new Error(USAGE);
  const app = await NestFactory.createApplicationContext(CliModule, { logger: ['error'], abortOnError: false });
  try {
    const { userId, secret } = await app.get(AuthService).createUserWithKey(userName);
    process.stdout.write(`${JSON.stringify({ user_id: userId, api_key: secret })}\n`);
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
