import { AsyncLocalStorage } from 'node:async_hooks';
import { ConsoleLogger, type DynamicModule, Module } from '@nestjs/common';
import type { Request, RequestHandler, Response } from 'express';
import { type Logger as PinoRoot, type LoggerOptions, pino } from 'pino';
import { currentSpanId, currentTraceId, tracingOn } from '#libs/telemetry';
import { PinoNestLogger } from './nest-logger.js';

/**
 * Structured logs of both processes: one pino logger per process, JSON lines on stdout (one object
 * per line, ISO time, level label, `service`), human-readable through pino-pretty when
 * LOG_FORMAT=pretty (what `npm start` sets). Nest's own logger and every `new Logger(...)` go
 * through it (PinoNestLogger, `app.useLogger`).
 *
 * Context fields: what runs inside `withLogContext({...}, fn)` carries those fields on every line
 * it logs (an AsyncLocalStorage read by pino's mixin): `request_id` for a request on the api,
 * `session_id`, `turn_id`, `run_id` for a run on the worker; `trace_id` and `span_id` of the active
 * span while tracing is on.
 *
 * Never logged: request or response bodies and headers (the request serializer keeps the method
 * and path only), and whatever the redaction paths below name (credentials, message content),
 * should a log call ever pass such an object.
 */

export type LogFields = Record<string, string | number | boolean | null | undefined>;

const context = new AsyncLocalStorage<LogFields>();

/** Runs `fn` with `fields` added to the log context (nested contexts keep the outer fields). */
export function withLogContext<T>(fields: LogFields, fn: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, fn);
}

/** Changes fields of the current log context (a run that yields into its successor); no-op outside one. */
export function setLogContext(fields: LogFields): void {
  const store = context.getStore();
  if (store) Object.assign(store, fields);
}

/** The fields of the current log context. */
export function currentLogContext(): LogFields {
  return { ...context.getStore() };
}

/** Paths pino replaces with "[redacted]": credentials and message content, at the top level and one level down. */
export const LOG_REDACT_PATHS: string[] = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'req.headers["x-api-key"]',
  'req.body',
  'res.headers["set-cookie"]',
  ...['authorization', 'cookie', 'password', 'secret', 'token', 'api_key', 'apiKey', 'access_token', 'client_secret', 'body', 'content', 'messages', 'input'].flatMap(
    (key) => [key, `*.${key}`],
  ),
];

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface LogSettings {
  level: string;
  pretty: boolean;
  /** Colour codes in pretty lines (never in JSON lines). */
  color?: boolean;
}

/**
 * LOG_LEVEL (default info), LOG_FORMAT (`json`, the default, or `pretty`) and LOG_COLOR (`auto`,
 * the default: colour only when stdout is a terminal, so logs written to a file or a pipe carry
 * no escape codes; `always`, as the dev stack sets when it shows the lines on a terminal; `never`),
 * validated.
 */
export function logSettings(env: NodeJS.ProcessEnv = process.env, stdoutIsTerminal = process.stdout.isTTY === true): LogSettings {
  const level = (env.LOG_LEVEL || 'info').toLowerCase();
  if (!LEVELS.includes(level)) throw new Error(`LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  const format = (env.LOG_FORMAT || 'json').toLowerCase();
  if (format !== 'json' && format !== 'pretty') throw new Error(`LOG_FORMAT must be json or pretty, got "${env.LOG_FORMAT}"`);
  const color = (env.LOG_COLOR || 'auto').toLowerCase();
  if (color !== 'auto' && color !== 'always' && color !== 'never') throw new Error(`LOG_COLOR must be auto, always or never, got "${env.LOG_COLOR}"`);
  return { level, pretty: format === 'pretty', color: format === 'pretty' && (color === 'always' || (color === 'auto' && stdoutIsTerminal)) };
}

/**
 * Nest's own console logger for what it logs before the process's logger takes over (and for what
 * it buffered when the start fails): plain text unless the logs are coloured.
 */
export function startupLogger(settings: LogSettings = logSettings()): ConsoleLogger {
  return new ConsoleLogger({ colors: settings.color === true });
}

/**
 * The fields every line carries: the log context's, and while tracing is on the active span's
 * `trace_id` and `span_id` (a line logged while serving a request or running a turn names the
 * trace to open). Off: one boolean test.
 */
export function logMixin(): LogFields {
  const fields: LogFields = { ...context.getStore() };
  if (tracingOn()) {
    const traceId = currentTraceId();
    if (traceId !== undefined) {
      fields.trace_id = traceId;
      fields.span_id = currentSpanId();
    }
  }
  return fields;
}

export function pinoOptions(service: string, settings: LogSettings = logSettings()): LoggerOptions {
  const options: LoggerOptions = {
    level: settings.level,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' },
    // A copy: pino merges the call's own fields into what the mixin returns.
    mixin: logMixin,
  };
  if (settings.pretty) {
    options.transport = {
      target: 'pino-pretty',
      options: { colorize: settings.color === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service,context,req,res', messageFormat: '{if context}[{context}] {end}{msg}', singleLine: true },
    };
  } else {
    options.formatters = { level: (label) => ({ level: label }) };
  }
  return options;
}

let root: PinoRoot | undefined;

/** The process's pino logger (created on first use). */
export function rootLogger(service: string): PinoRoot {
  root ??= pino(pinoOptions(service));
  return root;
}

@Module({})
class LoggingModule {}

/**
 * Nest's logger over the process's logger: register once in the root module, then
 * `app.useLogger(app.get(PinoNestLogger))`. Requests are logged by `httpLogger()`, mounted first
 * in the api's middleware chain, so that requests refused before any route (401, 413, 429) are
 * logged too.
 */
export function loggingModule(service: string): DynamicModule {
  return {
    module: LoggingModule,
    global: true,
    providers: [{ provide: PinoNestLogger, useFactory: () => new PinoNestLogger(rootLogger(service)) }],
    exports: [PinoNestLogger],
  };
}

/** Health and metrics probes are polled every few seconds: not logged. */
const QUIET_PATHS = /^\/(health|metrics)(\/|\?|$)/;

/**
 * One line per request when its response closed (finished, or the client went away): method, path,
 * status, duration and `request_id` (the X-Request-Id the request was answered with, which must
 * be set before this runs). 5xx at error level, the rest at info.
 *
 * Written here rather than with pino-http, whose middleware builds two child loggers per request
 * and serialises the request into their bindings before anything is known about the response:
 * that was a few per cent of the api's CPU on the read path. This builds one small object when
 * the line is written, and nothing at all when its level is off.
 */
export function httpLogger(service: string, requestIdOf: (res: Response) => string): RequestHandler {
  const logger = rootLogger(service);
  return (req, res, next) => {
    if (QUIET_PATHS.test(req.url)) return next();
    const started = Date.now();
    // The request's span (the request-span middleware runs first) is not active when the response
    // closes: its ids are read now.
    const traceId = tracingOn() ? currentTraceId() : undefined;
    const spanId = traceId === undefined ? undefined : currentSpanId();
    res.once('close', () => {
      const status = res.statusCode;
      // The client left before the response was complete: not the status it was about to get. (An
      // event stream ends that way as a matter of course: the client closes it.)
      const aborted = !res.writableFinished && !String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
      const level = status >= 500 ? 'error' : aborted ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const path = pathOf(req);
      const line: Record<string, unknown> = { request_id: requestIdOf(res), req: { method: req.method, url: path }, res: { status_code: status }, responseTime: Date.now() - started };
      if (status >= 500) line.err = new Error(`failed with status code ${status}`);
      if (aborted) line.aborted = true;
      if (traceId !== undefined) Object.assign(line, { trace_id: traceId, span_id: spanId });
      logger[level](line, `${req.method} ${path} ${status}`);
    });
    next();
  };
}

/** The request path without its query string (cursors and filters are not worth a log line). */
function pathOf(req: { url?: string; originalUrl?: string } | Request): string {
  const url = (req as Request).originalUrl ?? req.url ?? '';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
