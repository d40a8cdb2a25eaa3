import type { LoggerService } from '@nestjs/common';

/** How often one repeated condition (an outage, a failing job) is logged. */
export const REPEATED_CONDITION_LOG_MS = 10_000;

/**
 * Logs a repeated condition once per interval per key: an outage fails every call, and one line
 * per interval says so without flooding the log.
 */
export class ThrottledLog {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly logger: Pick<LoggerService, 'warn' | 'error'>,
    private readonly intervalMs = REPEATED_CONDITION_LOG_MS,
  ) {}

  warn(message: string, key = ''): void {
    if (this.due(key)) this.logger.warn(message);
  }

  error(message: string, key = ''): void {
    if (this.due(key)) this.logger.error(message);
  }

  private due(key: string): boolean {
    const now = Date.now();
    if (now - (this.last.get(key) ?? 0) < this.intervalMs) return false;
    this.last.set(key, now);
    return true;
  }
}
