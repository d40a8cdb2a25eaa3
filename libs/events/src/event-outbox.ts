import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { EventPublisher, type DurableRow, type OutgoingEvent, stampEvents } from './event-publisher.js';

/** Outbox rows committed together, ready to be published. */
export interface OutboxBatch {
  sessionId: string;
  rows: DurableRow[];
}

export interface AppendOptions {
  /** The fencing epoch of the run these events announce; relaying them raises the session's fence. */
  epoch?: number | null;
  /** Relaying these rows must also nudge the session's worker (an accepted input). */
  nudge?: boolean;
}

export interface FlushResult {
  /** Whether every committed row of the session is now in the stream. */
  complete: boolean;
  /** Whether a relayed row asked for a nudge. */
  nudge: boolean;
}

const RELAY_PAGE = 500;
const MARK_INTERVAL_MS = 100;
const MAX_PAGES = 20;

/**
 * The transactional outbox of session events. Durable events are rows written in the transaction
 * of the facts they announce, numbered per session; after commit the writer publishes them at
 * once, and the relay publishes whatever a crash or a Redis outage left behind. An event exists
 * for subscribers exactly when its facts are committed, and never twice.
 */
@Injectable()
export class EventOutbox implements OnApplicationShutdown {
  private readonly logger = new Logger(EventOutbox.name);
  private lastFailureLog = 0;
  private readonly pendingMarks = new Map<string, number>();
  private marking: NodeJS.Timeout | null = null;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly publisher: EventPublisher,
  ) {}

  /**
   * Appends events to the session's outbox. Call inside the transaction that makes them true,
   * holding the session lock: the next sequence numbers are read from the table itself.
   */
  async append(manager: EntityManager, sessionId: string, events: OutgoingEvent[], options: AppendOptions = {}): Promise<OutboxBatch> {
    if (events.length === 0) return { sessionId, rows: [] };
    const stamped = stampEvents(sessionId, events);
    // One statement: the sequence numbers are written into each payload's yuxi.seq.
    const rows = (await manager.query(
      `WITH base AS (SELECT coalesce(max(seq), 0) AS n FROM session_events WHERE session_id = $1)
       INSERT INTO session_events (session_id, seq, event_id, type, epoch, nudge, payload)
       SELECT $1, base.n + e.ord, e.doc->>'event_id', e.doc->>'type', $2, $3,
              jsonb_set(e.doc, '{yuxi,seq}', to_jsonb(base.n + e.ord))::text
       FROM base, jsonb_array_elements($4::jsonb) WITH ORDINALITY AS e(doc, ord)
       RETURNING seq, type, payload`,
      [sessionId, options.epoch ?? null, options.nudge ?? false, JSON.stringify(stamped)],
    )) as { seq: string; type: string; payload: string }[];
    return {
      sessionId,
      rows: rows.map((row) => ({ seq: Number(row.seq), epoch: options.epoch ?? null, type: row.type, payload: row.payload })).sort((a, b) => a.seq - b.seq),
    };
  }

  /**
   * Publishes committed rows of a session: the batch just committed when the stream is caught up,
   * else every unpublished row in order. Never throws: what is not published now, the relay
   * publishes later.
   */
  async flush(sessionId: string, batch?: OutboxBatch): Promise<FlushResult> {
    try {
      if (batch && batch.rows.length > 0) {
        const last = await this.publisher.publishDurable(sessionId, batch.rows);
        const lastRow = batch.rows[batch.rows.length - 1]!;
        if (last >= lastRow.seq) {
          this.markLater(sessionId, last);
          return { complete: true, nudge: false };
        }
      }
      return await this.relaySession(sessionId);
    } catch (error) {
      this.logFailure(`events of session ${sessionId} wait for the relay: ${String(error)}`);
      return { complete: false, nudge: false };
    }
  }

  /** Sessions holding rows that stayed unpublished for longer than `olderThanMs`, oldest first. */
  async laggingSessions(olderThanMs: number, limit: number): Promise<string[]> {
    const rows = (await this.dataSource.query(
      `SELECT session_id FROM session_events
       WHERE published_at IS NULL AND created_at < now() - make_interval(secs => $1::double precision / 1000)
       GROUP BY session_id ORDER BY min(created_at) LIMIT $2`,
      [olderThanMs, limit],
    )) as { session_id: string }[];
    return rows.map((row) => row.session_id);
  }

  private async relaySession(sessionId: string): Promise<FlushResult> {
    let nudge = false;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const rows = (await this.dataSource.query(
        `SELECT seq, epoch, type, nudge, payload FROM session_events
         WHERE session_id = $1 AND published_at IS NULL ORDER BY seq LIMIT $2`,
        [sessionId, RELAY_PAGE],
      )) as { seq: string; epoch: string | null; type: string; nudge: boolean; payload: string }[];
      if (rows.length === 0) return { complete: true, nudge };
      // Every row below the oldest unpublished one was confirmed in the stream: the floor from
      // which a lost or rolled-back stream may restart.
      const last = await this.publisher.publishDurable(
        sessionId,
        rows.map((row) => ({ seq: Number(row.seq), epoch: row.epoch === null ? null : Number(row.epoch), type: row.type, payload: row.payload })),
        Number(rows[0]!.seq) - 1,
      );
      await this.markPublished(sessionId, last);
      nudge ||= rows.some((row) => row.nudge && Number(row.seq) <= last);
      if (last < Number(rows[rows.length - 1]!.seq)) {
        // The stream is ahead of a row we hold, or behind a row another flusher has not marked yet.
        return { complete: false, nudge };
      }
      if (rows.length < RELAY_PAGE) return { complete: true, nudge };
    }
    return { complete: false, nudge };
  }

  /**
   * Fast-path publications are marked in one statement per interval for all sessions, not one
   * commit each: a row marked late is at worst relayed again, and the stream skips duplicates.
   */
  private markLater(sessionId: string, upToSeq: number): void {
    this.pendingMarks.set(sessionId, Math.max(upToSeq, this.pendingMarks.get(sessionId) ?? 0));
    this.marking ??= setTimeout(() => void this.flushMarks(), MARK_INTERVAL_MS);
  }

  async flushMarks(): Promise<void> {
    if (this.marking) clearTimeout(this.marking);
    this.marking = null;
    if (this.pendingMarks.size === 0) return;
    const marks = [...this.pendingMarks];
    this.pendingMarks.clear();
    await this.dataSource
      .query(
        `UPDATE session_events e SET published_at = now() FROM unnest($1::uuid[], $2::bigint[]) AS m(session_id, seq)
         WHERE e.session_id = m.session_id AND e.seq <= m.seq AND e.published_at IS NULL`,
        [marks.map(([id]) => id), marks.map(([, seq]) => seq)],
      )
      .catch((error: unknown) => this.logFailure(`publication marks not written (the relay re-publishes, the stream skips duplicates): ${String(error)}`));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.flushMarks();
  }

  private async markPublished(sessionId: string, upToSeq: number): Promise<void> {
    await this.dataSource.query(`UPDATE session_events SET published_at = now() WHERE session_id = $1 AND seq <= $2 AND published_at IS NULL`, [
      sessionId,
      upToSeq,
    ]);
  }

  /** A Redis outage fails every flush: say so once per interval, not once per event. */
  private logFailure(message: string): void {
    const now = Date.now();
    if (now - this.lastFailureLog < 10_000) return;
    this.lastFailureLog = now;
    this.logger.warn(message);
  }
}
