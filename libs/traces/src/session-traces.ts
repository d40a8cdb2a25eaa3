import { Injectable } from '@nestjs/common';
import { listEnvelope, type PageQuery } from '#libs/database';
import { tracingOn } from '#libs/telemetry';
import { SessionSpansRepository } from './session-spans.repository.js';
import { cutTracePage, MAX_TRACES_RESPONSE_BYTES } from './trace-page.js';
import type { SessionTraceListDto } from './trace.dto.js';

/**
 * The traces of a session as the traces route lists them: one entry per turn that has a trace with
 * stored spans, its spans as OTLP JSON, under the 16 MiB response bound (trace-page.ts). The caller
 * has checked that the session is the principal's.
 */
@Injectable()
export class SessionTraces {
  constructor(private readonly spans: SessionSpansRepository) {}

  async list(sessionId: string, page: PageQuery): Promise<SessionTraceListDto> {
    // Off, no span is stored (and what an earlier run stored is not served): nothing is read.
    if (!tracingOn()) return listEnvelope([], false);
    const { rows: turns, hasMore } = await this.spans.tracedTurns(sessionId, page);
    if (turns.length === 0) return listEnvelope([], false);
    const rows = await this.spans.spansOfTraces(
      sessionId,
      turns.map((turn) => turn.traceId),
      MAX_TRACES_RESPONSE_BYTES,
    );
    const { data, hasMore: more } = cutTracePage(sessionId, turns, rows, hasMore);
    return listEnvelope(data, more);
  }
}
