import { Injectable } from '@nestjs/common';
import { listEnvelope } from '#libs/database';
import { SessionSpansRepository } from './session-spans.repository.js';
import { cutTracePage, MAX_TRACES_RESPONSE_BYTES, type TracedTurn } from './trace-page.js';
import type { SessionTraceListDto } from './trace.dto.js';

/**
 * The stored spans of a session's turns as the traces route lists them: one entry per turn, its
 * spans as OTLP JSON, under the 16 MiB response bound (trace-page.ts). Which turns, in which order,
 * is the engine's (the protocol's use case reads them and asks here); the caller has checked that
 * the session is the principal's.
 */
@Injectable()
export class SessionTraces {
  constructor(private readonly spans: SessionSpansRepository) {}

  /** The turns (of `turns`, in its order) that have stored spans: the others' traces are unpublished, or gone to retention. */
  async withSpans<T extends TracedTurn>(sessionId: string, turns: readonly T[]): Promise<T[]> {
    const found = await this.spans.withSpans(sessionId, turns);
    return turns.filter((_, ord) => found.has(ord));
  }

  /** The page of the turns' traces; `more`: whether turns with spans follow them. */
  async page(sessionId: string, turns: readonly TracedTurn[], more: boolean): Promise<SessionTraceListDto> {
    if (turns.length === 0) return listEnvelope([], more);
    const rows = await this.spans.spansOfTurns(sessionId, turns, MAX_TRACES_RESPONSE_BYTES);
    const { data, hasMore } = cutTracePage(sessionId, turns, rows, more);
    return listEnvelope(data, hasMore);
  }
}
