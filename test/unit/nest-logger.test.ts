import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { pino } from 'pino';
import { logSettings, PinoNestLogger, pinoOptions } from '#libs/config';

/** A PinoNestLogger over a pino logger that writes its JSON lines into `lines`. */
function capture(level = 'info'): { logger: PinoNestLogger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, any>);
      done();
    },
  });
  const options = pinoOptions('test', { level, pretty: false });
  return { logger: new PinoNestLogger(pino(options, sink)), lines };
}

describe('PinoNestLogger: Nest log calls as pino lines', () => {
  it('takes the context a named Logger appends, and maps the levels', () => {
    const { logger, lines } = capture('trace');
    logger.log('listening on :3000', 'Api');
    logger.warn('slow query', 'Database');
    logger.debug('detail', 'Runtime');
    logger.verbose('more detail', 'Runtime');
    logger.fatal('gone', 'Worker');
    assert.deepEqual(
      lines.map((line) => [line.level, line.context, line.msg]),
      [
        ['info', 'Api', 'listening on :3000'],
        ['warn', 'Database', 'slow query'],
        ['debug', 'Runtime', 'detail'],
        ['trace', 'Runtime', 'more detail'],
        ['fatal', 'Worker', 'gone'],
      ],
    );
    assert.equal(lines[0]!.service, 'test');
  });

  it("logs Nest's error(message, stack, context) with the stack as err", () => {
    const { logger, lines } = capture();
    const stack = 'Error: boom\n    at run (/app/x.js:1:1)\n    at next (/app/y.js:2:2)';
    logger.error('run 1 failed', stack, 'Runtime');
    // No stack: a named Logger passes (message, undefined, context).
    logger.error('plain', undefined, 'Runtime');
    // A stack without a context (the static Logger).
    logger.error('static', stack);
    assert.equal(lines[0]!.level, 'error');
    assert.equal(lines[0]!.context, 'Runtime');
    assert.equal(lines[0]!.msg, 'run 1 failed');
    assert.equal(lines[0]!.err.stack, stack);
    assert.deepEqual([lines[1]!.msg, lines[1]!.context, lines[1]!.err], ['plain', 'Runtime', undefined]);
    assert.deepEqual([lines[2]!.msg, lines[2]!.context, lines[2]!.err.stack], ['static', undefined, stack]);
  });

  it('logs an Error given as the message as err, and merges an object message into the fields', () => {
    const { logger, lines } = capture();
    logger.error(new TypeError('bad input'), undefined, 'ExceptionsHandler');
    logger.log({ queue: 'sessions', waiting: 3 }, 'Queue');
    assert.equal(lines[0]!.msg, 'bad input');
    assert.equal(lines[0]!.context, 'ExceptionsHandler');
    assert.equal(lines[0]!.err.type, 'TypeError');
    assert.match(lines[0]!.err.stack, /bad input/);
    assert.equal(lines[1]!.queue, 'sessions');
    assert.equal(lines[1]!.waiting, 3);
    assert.equal(lines[1]!.context, 'Queue');
  });

  it('writes nothing below the level, and appends stray params to the message', () => {
    const { logger, lines } = capture('warn');
    logger.log('not written', 'Api');
    logger.warn('tried', 3, { id: 'x' }, 'Api');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.msg, 'tried 3 {"id":"x"}');
  });

  it('is what Nest Logger instances write through once installed', () => {
    const { logger, lines } = capture();
    Logger.overrideLogger(logger);
    try {
      new Logger('Worker').log('worker ready');
      new Logger('Worker').error('failed', new Error('cause').stack);
    } finally {
      Logger.overrideLogger(false);
    }
    assert.deepEqual([lines[0]!.context, lines[0]!.msg], ['Worker', 'worker ready']);
    assert.deepEqual([lines[1]!.context, lines[1]!.msg, lines[1]!.err.message], ['Worker', 'failed', 'failed']);
  });

  it("logs Nest's start-up chatter (modules initialised, routes mapped) at debug, what follows at info", () => {
    const { logger, lines } = capture('info');
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('SessionsController {/api/v1/agents/sessions}:', 'RoutesResolver');
    logger.log('Mapped {/api/v1/agents/sessions, POST} route', 'RouterExplorer');
    logger.log('listening on :3000 (docs at /docs)', 'Api');
    assert.deepEqual(lines.map((line) => line.msg), ['listening on :3000 (docs at /docs)']);
    const verbose = capture('debug');
    verbose.logger.log('Mapped {/api/v1/agents/sessions, POST} route', 'RouterExplorer');
    assert.deepEqual(verbose.lines.map((line) => [line.level, line.context]), [['debug', 'RouterExplorer']]);
  });
});

describe('log colours', () => {
  it('colours pretty lines only on a terminal unless LOG_COLOR says otherwise, and JSON lines never', () => {
    assert.equal(logSettings({ LOG_FORMAT: 'pretty' }, true).color, true);
    assert.equal(logSettings({ LOG_FORMAT: 'pretty' }, false).color, false, 'a file or a pipe gets no escape codes');
    assert.equal(logSettings({ LOG_FORMAT: 'pretty', LOG_COLOR: 'always' }, false).color, true);
    assert.equal(logSettings({ LOG_FORMAT: 'pretty', LOG_COLOR: 'never' }, true).color, false);
    assert.equal(logSettings({ LOG_FORMAT: 'json', LOG_COLOR: 'always' }, true).color, false);
    assert.throws(() => logSettings({ LOG_COLOR: 'sometimes' }, true), /LOG_COLOR must be auto, always or never/);
  });
});
