import 'reflect-metadata';
import { Body, Controller, Get, HttpCode, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

/** The baseline of the HTTP scenarios: a bare Nest + Express app with one trivial route each way. */
@Controller('bare')
class BareController {
  @Get()
  read(): { ok: true } {
    return { ok: true };
  }

  @Post()
  @HttpCode(202)
  submit(@Body() body: unknown): { ok: true; received: boolean } {
    return { ok: true, received: body !== undefined };
  }
}

@Module({ controllers: [BareController] })
class BareModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(BareModule, { logger: ['error'] });
  await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  process.send?.('ready');
}

void main();
