import { Injectable, Logger } from '@nestjs/common';
import type { RowStorage } from '#libs/database';
import { AppConfig, ThrottledLog } from '#libs/config';
import { tracingOn } from '#libs/telemetry';
import { SessionSpansRepository, SPAN_DELETE_BATCH } from './session-spans.repository.js';

/** At most this many delete statements a tick (SPAN_DELETE_BATCH spans each): a sweep stays short; a backlog is worked off tick after tick. */
export const SPAN_DELETE_BATCHES_PER_TICK = 5;
/** Once nothing more is due: the next look, while tracing is on (spans keep arriving and ageing). */
export const SPAN_RETENTION_ON_PAUSE_MS = 60_000;
/**
 * The same, while tracing is off: the table only holds what an earlier run with tracing on left,
 * so an idle deployment pays one indexed statement an hour (the first at start).
 */
export const SPAN_RETENTION_OFF_PAUSE_MS = 3_600_000;

/**
 * Deletes the spans older than TRACE_RETENTION_S, a few batches per tick of the worker's recovery
 * sweep. Any number of workers may run it at once (a batch two of them pick is deleted once).
 */
@Injectable()
export class SpanRetention {
  private readonly failures = new ThrottledLog(new Logger('SpanRetention'));
  private nextAt = 0;

  constructor(
    private readonly spans: SessionSpansRepository,
    private readonly config: AppConfig,
  ) {}

  /** The purge of deleted sessions (libs/retention SessionPurge): up to `limit` of their spans, whatever TRACE_RETENTION_S says. */
  purgeSessions(sessionIds: string[], limit: number): Promise<RowStorage> {
    return this.spans.purgeSessions(sessionIds, limit);
  }

  /** How many spans were deleted (0 when not due). A failure is logged and retried at the next due tick; it never fails the sweep. */
  async run(now = Date.now()): Promise<number> {
    if (now < this.nextAt) return 0;
    let deleted = 0;
    try {
      for (let batch = 0; batch < SPAN_DELETE_BATCHES_PER_TICK; batch += 1) {
        const count = await this.spans.deleteOlderThan(this.config.traceRetentionS, SPAN_DELETE_BATCH);
        deleted += count;
        if (count < SPAN_DELETE_BATCH) {
          this.nextAt = now + (tracingOn() ? SPAN_RETENTION_ON_PAUSE_MS : SPAN_RETENTION_OFF_PAUSE_MS);
          return deleted;
        }
      }
      // A full last batch: more is due; the next tick goes on.
      return deleted;
    } catch (error) {
      this.nextAt = now + SPAN_RETENTION_ON_PAUSE_MS;
      this.failures.warn(`span retention failed: ${error instanceof Error ? error.message : String(error)}`);
      return deleted;
    }
  }
}
