import { Logger as NestLogger } from '@nestjs/common';
import type { Logger as TypeOrmLogger } from 'typeorm';

/**
 * TypeORM's own logger prints a failed query with its parameters — message text, event payloads —
 * to stdout, past the structured logger and its redaction. This one logs the error and the first
 * line of the statement only, never a parameter, through the application's logger.
 */
export class QueryLogger implements TypeOrmLogger {
  private readonly logger = new NestLogger('Database');

  logQuery(): void {}

  logQueryError(error: string | Error, query: unknown): void {
    const message = error instanceof Error ? error.message : error;
    this.logger.warn(`query failed: ${message} (${firstLine(query)})`);
  }

  logQuerySlow(time: number, query: unknown): void {
    this.logger.warn(`slow query (${time} ms): ${firstLine(query)}`);
  }

  logSchemaBuild(): void {}

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
  }
}

/** A statement is a string, or a prepared statement `{name, text}` (see prepared()); a logger never throws. */
function firstLine(query: unknown): string {
  const text = typeof query === 'string' ? query : typeof (query as { text?: unknown } | null)?.text === 'string' ? (query as { text: string }).text : '';
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
}
