import type { LoggerService } from '@nestjs/common';
import type { Level, Logger as PinoRoot } from 'pino';

/**
 * Nest's start-up chatter (each module initialised, each route mapped: a hundred lines) is logged
 * at debug, so that a start shows what matters (a setting missing, the port it listens on).
 */
const START_UP_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

/** A line of a stack trace, as V8 writes them: what tells a stack apart from a context name. */
const STACK_LINE = /\n\s+at /;

/**
 * Nest's logger (its own messages and every `new Logger(name)`) over the process's pino logger:
 * `app.useLogger(new PinoNestLogger(rootLogger(service)))`. One pino line per call, the Logger's
 * name as `context`.
 *
 * What Nest passes: `(message, ...params)`, where a named Logger appends its name as the last
 * param; `error` gets `(message, stack?, name)` or `(error, undefined, name)`. So:
 * - the last param, when a string that is not a stack trace, is the `context`;
 * - an Error (as the message or a param) is logged as `err` (pino's serializer: type, message,
 *   stack), and a stack trace string as the stack of an `err` whose message is the message;
 * - a plain object as the message is merged into the line's fields;
 * - other params (rare) are appended to the message text.
 */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: PinoRoot) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(given: Level, message: unknown, params: unknown[]): void {
    const last = params.at(-1);
    const level: Level = given === 'info' && typeof last === 'string' && START_UP_CONTEXTS.has(last) ? 'debug' : given;
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    const rest = params.filter((param) => param !== undefined);
    const context = rest.at(-1);
    if (typeof context === 'string' && !STACK_LINE.test(context)) {
      fields.context = context;
      rest.pop();
    }
    let text: string | undefined;
    if (message instanceof Error) {
      fields.err = message;
      text = message.message;
    } else if (message !== null && typeof message === 'object') {
      Object.assign(fields, message);
    } else {
      text = String(message);
    }
    const extra: string[] = [];
    for (const param of rest) {
      if (param instanceof Error && fields.err === undefined) fields.err = param;
      else if (typeof param === 'string' && STACK_LINE.test(param) && fields.err === undefined) fields.err = withStack(text ?? '', param);
      else extra.push(typeof param === 'string' ? param : safeJson(param));
    }
    if (extra.length > 0) text = [text, ...extra].filter((part) => part !== undefined && part !== '').join(' ');
    if (text === undefined) this.pino[level](fields);
    else this.pino[level](fields, text);
  }
}

/** An Error carrying a stack trace that came as a string (what Nest's `error(message, stack)` passes). */
function withStack(message: string, stack: string): Error {
  const error = new Error(message);
  error.stack = stack;
  return error;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
