import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { listEnvelope, type Page, type PageQuery } from '#libs/database';
import { SessionsRepository, TurnsRepository } from '#libs/engine';
import { tracingOn } from '#libs/telemetry';
import { SessionTraces, type SessionTraceListDto } from '#libs/traces';

/**
 * A page looks at most this many traced turns for ones with stored spans. Past it the page ends
 * shorter than `limit` with `has_more` true (the next page starts after its last entry): turns
 * whose spans retention deleted are walked a bounded stretch at a time, never the whole session.
 */
export const MAX_TRACED_TURNS_SCANNED = 1000;
/** After a read found turns without spans, the next reads take this many turns at once (more such turns are likely). */
const SCAN_CHUNK = 100;

/**
 * `GET …/sessions/{id}/traces`: the session's traces as OTLP JSON, one per turn with stored spans;
 * another owner's session is 404. The engine pages the session's traced turns (turns.trace_id);
 * libs/traces says which have stored spans and serves their entries.
 */
@Injectable()
export class ListSessionTraces {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly traces: SessionTraces,
  ) {}

  async execute(principal: Principal, sessionId: string, page: PageQuery): Promise<SessionTraceListDto> {
    await this.sessions.getVisible(principal.userId, sessionId);
    // Off, no span is stored (and what an earlier run stored is not served): nothing is read.
    if (!tracingOn()) return listEnvelope([], false);
    const { turns, more } = await turnsWithSpans(
      (chunk) => this.turns.tracedTurns(sessionId, chunk),
      (rows) => this.traces.withSpans(sessionId, rows),
      page,
    );
    return this.traces.page(sessionId, turns, more);
  }
}

/**
 * Up to `limit` traced turns with stored spans from the cursor on, and whether more may follow:
 * traced turns are read (`read`, the engine's page) in chunks, limit + 1 first (one read learns
 * has_more when every turn has spans), until limit + 1 with spans are found (`withSpans`, libs/traces),
 * the session has no more, or MAX_TRACED_TURNS_SCANNED were looked at (then `more` is true:
 * turns not looked at remain). Linear: each turn is read and checked once.
 */
export async function turnsWithSpans<T extends { id: string }>(read: (page: PageQuery) => Promise<Page<T>>, withSpans: (turns: T[]) => Promise<T[]>, page: PageQuery): Promise<{ turns: T[]; more: boolean }> {
  const found: T[] = [];
  let after = page.after;
  let scanned = 0;
  for (;;) {
    const need = page.limit + 1 - found.length;
    const chunk = await read({ after, limit: scanned === 0 ? need : Math.min(Math.max(need, SCAN_CHUNK), MAX_TRACED_TURNS_SCANNED - scanned), order: page.order });
    scanned += chunk.rows.length;
    found.push(...(await withSpans(chunk.rows)));
    if (found.length > page.limit) return { turns: found.slice(0, page.limit), more: true };
    if (!chunk.hasMore || chunk.rows.length === 0) return { turns: found, more: false };
    if (scanned >= MAX_TRACED_TURNS_SCANNED) return { turns: found, more: true };
    after = chunk.rows.at(-1)!.id;
  }
}
