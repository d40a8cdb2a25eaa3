import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { listEnvelope, type Page, type PageQuery } from '#libs/database';
import { SessionsRepository, TurnsRepository } from '#libs/engine';
import { tracingOn } from '#libs/telemetry';
import { SessionTraces, type SessionTraceListDto } from '#libs/traces';

/**
 * A page looks at this many traced turns for ones with stored spans once it has found one. Past it
 * the page ends shorter than `limit` with `has_more` true (the next page starts after its last
 * entry): turns without spans are walked a bounded stretch at a time, never the whole session.
 */
export const MAX_TRACED_TURNS_SCANNED = 1000;
/**
 * A page that has found none goes on to this many: an empty page with `has_more` true would stop
 * the SDKs (the official one pages after the last entry, and stops at an empty page). Only turns
 * retention has not passed are read, so a stretch of traced turns without spans is a span store
 * that failed for that long; past this bound the page is empty with `has_more` true and `last_id`
 * the last turn looked at (the cursor moves on).
 */
export const MAX_TRACED_TURNS_SCANNED_EMPTY = 10 * MAX_TRACED_TURNS_SCANNED;
/** After a read found turns without spans, the next reads take this many turns at once (more such turns are likely). */
const SCAN_CHUNK = 100;

/** A chunk of the scan: after the turn at `afterSeq` (null: from the start of the order). */
export interface ScanChunk {
  afterSeq: number | null;
  limit: number;
}

/**
 * `GET …/sessions/{id}/traces`: the session's traces as OTLP JSON, one per turn with stored spans;
 * another owner's session is 404. The engine pages the session's traced turns (turns.trace_id)
 * that retention has not passed; libs/traces says which have stored spans and serves their entries.
 */
@Injectable()
export class ListSessionTraces {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly traces: SessionTraces,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, sessionId: string, page: PageQuery): Promise<SessionTraceListDto> {
    await this.sessions.getVisible(principal.userId, sessionId);
    // Off, no span is stored (and what an earlier run stored is not served): nothing is read.
    if (!tracingOn()) return listEnvelope([], false);
    // The cursor is read once, by the first chunk; the next chunks pass the seq of the last turn read on.
    const { turns, more, lastScanned } = await turnsWithSpans(
      (chunk) => this.turns.tracedTurns(sessionId, { ...chunk, after: chunk.afterSeq === null ? page.after : undefined, order: page.order, retentionS: this.config.traceRetentionS }),
      (rows) => this.traces.withSpans(sessionId, rows),
      { afterSeq: null, limit: page.limit },
    );
    // Nothing found in the bound: the cursor still moves on, past every turn looked at.
    if (turns.length === 0) return { ...listEnvelope([], more), last_id: more ? (lastScanned?.id ?? null) : null };
    return this.traces.page(sessionId, turns, more);
  }
}

/**
 * Up to `limit` traced turns with stored spans from the cursor on, and whether more may follow:
 * traced turns are read (`read`, the engine's chunk) limit + 1 first (one read learns has_more when
 * every turn has spans), then SCAN_CHUNK at a time, until limit + 1 with spans are found
 * (`withSpans`, libs/traces), the session has no more, or MAX_TRACED_TURNS_SCANNED were looked at
 * with one found (MAX_TRACED_TURNS_SCANNED_EMPTY with none; then `more` is true: turns not looked
 * at remain). `lastScanned`: the last turn looked at. Linear: each turn is read and checked once.
 */
export async function turnsWithSpans<T extends { id: string; seq: number }>(
  read: (chunk: ScanChunk) => Promise<Page<T>>,
  withSpans: (turns: T[]) => Promise<T[]>,
  page: ScanChunk,
): Promise<{ turns: T[]; more: boolean; lastScanned: T | null }> {
  const found: T[] = [];
  let afterSeq = page.afterSeq;
  let scanned = 0;
  let lastScanned: T | null = null;
  for (;;) {
    const need = page.limit + 1 - found.length;
    const bound = found.length > 0 ? MAX_TRACED_TURNS_SCANNED : MAX_TRACED_TURNS_SCANNED_EMPTY;
    const chunk = await read({ afterSeq, limit: scanned === 0 ? need : Math.min(Math.max(need, scanned < MAX_TRACED_TURNS_SCANNED ? SCAN_CHUNK : MAX_TRACED_TURNS_SCANNED), bound - scanned) });
    scanned += chunk.rows.length;
    lastScanned = chunk.rows.at(-1) ?? lastScanned;
    found.push(...(await withSpans(chunk.rows)));
    if (found.length > page.limit) return { turns: found.slice(0, page.limit), more: true, lastScanned };
    if (!chunk.hasMore || chunk.rows.length === 0) return { turns: found, more: false, lastScanned };
    if (scanned >= (found.length > 0 ? MAX_TRACED_TURNS_SCANNED : MAX_TRACED_TURNS_SCANNED_EMPTY)) return { turns: found, more: true, lastScanned };
    afterSeq = lastScanned!.seq;
  }
}
