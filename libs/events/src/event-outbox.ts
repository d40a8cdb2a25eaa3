import { randomBytes } from 'node:crypto';
import { prepared, preparedUpTo } from '#libs/database';
import { Injectable, Logger } from '@nestjs/common';
import { ThrottledLog } from '#libs/config';
import { webhookPayloadOf } from '#libs/webhooks';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { EventPublisher, type DurableRow } from './event-publisher.js';
import type { OutgoingEvent } from './outgoing-events.js';

/** Outbox rows committed together, ready to be published. */
export interface OutboxBatch {
  sessionId: string;
  rows: DurableRow[];
  /** The webhook endpoints the batch wrote deliveries for (their chain is the session): nudged after commit. */
  webhookEndpoints?: string[];
}

export interface AppendOptions {
  /** The fencing epoch of the run these events announce; relaying them raises the session's fence. */
  epoch?: number | null;
  /** Relaying these rows must also nudge the session's worker (an accepted input). */
  nudge?: boolean;
}

/** An append composed into a caller's statement (see `EventOutbox.appendWrite`). */
export interface OutboxWrite {
  ctes: string[];
  params: unknown[];
  /** Whether the CTEs include `fan` (webhook deliveries). */
  hooked: boolean;
  /** Rows the statement's text grows with (for `preparedUpTo`). */
  size: number;
  /** The committed batch from what `ins` returned and the endpoints `fan` wrote for. */
  batch(rows: { seq: string | number; type: string; payload: string }[], hooked: string[] | null): OutboxBatch;
}

export interface FlushResult {
  /** Whether every committed row of the session is now in the stream. */
  complete: boolean;
}

/** A session the relay found with rows the stream does not have. */
export interface LaggingSession {
  sessionId: string;
  /** A lagging row asked for a nudge (an accepted input whose writer may never have nudged). */
  nudge: boolean;
}

const RELAY_PAGE = 500;
const MAX_PAGES = 20;
/** Rows committed this long after their insert clock are still seen by the next relay window. */
const RELAY_WINDOW_MARGIN_MS = 1_000;
/** Rows one relay pass reads at most; a larger window is relayed over several passes. */
const RELAY_MAX_ROWS = 20_000;

/**
 * The transactional outbox of session events. Durable events are rows written in the transaction
 * of the facts they announce, numbered per session; after commit the writer publishes them at
 * once. The outbox is insert-only: whether a row reached Redis is the stream's own sequence number,
 * and the relay compares recent rows with it, publishing whatever a crash or a Redis outage left
 * behind. An event exists for subscribers exactly when its facts are committed, and never twice.
 */
@Injectable()
export class EventOutbox {
  private readonly log = new ThrottledLog(new Logger(EventOutbox.name));

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly publisher: EventPublisher,
  ) {}

  /**
   * Appends events to the session's outbox. Call inside the transaction that makes them true,
   * holding the session lock: the next sequence numbers are read from the table itself.
   */
  async append(manager: EntityManager, sessionId: string, events: OutgoingEvent[], options: AppendOptions = {}): Promise<OutboxBatch> {
    const write = this.appendWrite(sessionId, events, options);
    if (!write) return { sessionId, rows: [] };
    const hooked = write.hooked ? '(SELECT array_agg(DISTINCT endpoint_id::text) FROM fan)' : 'NULL::text[]';
    const sql = `WITH ${write.ctes.join(',\n')}\n       SELECT seq, type, payload, ${hooked} AS hooked FROM ins`;
    const rows = (await manager.query(preparedUpTo(write.size, sql), write.params)) as { seq: string; type: string; payload: string; hooked: string[] | null }[];
    return write.batch(rows, rows[0]?.hooked ?? null);
  }

  /**
   * The append as CTEs (base, ins, and with webhook bodies w and fan) of a statement the caller
   * composes, parameters numbered from $1: `ins` returns (seq, type, payload) and `fan` the
   * endpoints that got a delivery. `epochSql` stands for the epoch where the statement itself
   * computes it (a run inserted by another CTE). Null when there is nothing to append.
   */
  appendWrite(sessionId: string, events: OutgoingEvent[], options: AppendOptions & { epochSql?: string } = {}): OutboxWrite | null {
    if (events.length === 0) return null;
    const stamped = this.publisher.stamp(sessionId, events);
    // A token no content can hold (random per append) stands for the sequence number until the
    // insert knows it: one statement, no JSON processing in Postgres.
    const token = `__yuxi_seq_${randomBytes(12).toString('hex')}__`;
    const payloads = stamped.map((event) => JSON.stringify({ ...event, yuxi: { ...(event.yuxi as object), seq: token } }));
    const values: unknown[] = [sessionId, options.epoch ?? null, options.nudge ?? false, `"${token}"`];
    const tuples = stamped.map((event, i) => {
      values.push(event.event_id, event.type, payloads[i]);
      const at = values.length;
      return `($${at - 2}, $${at - 1}, $${at}::text, ${i + 1})`;
    });
    // The webhook bodies of the events webhooks announce (a turn's end, a waitpoint, a created
    // session): most batches have none and keep the plain INSERT.
    const hooks: string[] = [];
    stamped.forEach((event) => {
      const payload = webhookPayloadOf(event, token);
      if (!payload) return;
      values.push(event.event_id, JSON.stringify(payload));
      hooks.push(`($${values.length - 1}, $${values.length}::text)`);
    });
    const epoch = options.epochSql ? `coalesce(${options.epochSql}, $2)` : '$2';
    const ctes = [
      `base AS (SELECT coalesce(max(seq), 0) AS n FROM session_events WHERE session_id = $1)`,
      `ins AS (INSERT INTO session_events (session_id, seq, event_id, type, epoch, nudge, payload)
       SELECT $1, base.n + e.ord, e.event_id, e.type, ${epoch}, $3, replace(e.payload, $4, (base.n + e.ord)::text)
       FROM base, (VALUES ${tuples.join(', ')}) AS e(event_id, type, payload, ord)
       RETURNING seq, type, payload, event_id)`,
    ];
    // The deliveries are written by the same statement, so by the same transaction as the facts:
    // one per enabled endpoint of the session's owner that takes the type. An owner without
    // endpoints costs an index probe, not a statement.
    if (hooks.length > 0) {
      ctes.push(
        // Key-share locked: an endpoint deleted meanwhile is skipped, never a foreign-key failure of the fact's transaction.
        `w AS (SELECT id, event_types FROM webhook_endpoints WHERE owner_id = (SELECT owner_id FROM sessions WHERE id = $1::uuid) AND enabled FOR KEY SHARE)`,
        `fan AS (INSERT INTO webhook_deliveries (id, endpoint_id, chain, seq, event_id, event_type, session_id, payload, status, next_attempt_at, created_at)
         SELECT gen_random_uuid(), w.id, $1::uuid::text, ins.seq, ins.event_id, ins.type, $1::uuid, replace(h.body, $4, ins.seq::text), 'pending', now(), now()
         FROM ins JOIN (VALUES ${hooks.join(', ')}) AS h(event_id, body) ON h.event_id = ins.event_id
         JOIN w ON w.event_types IS NULL OR ins.type = ANY (w.event_types)
         RETURNING endpoint_id)`,
      );
    }
    return {
      ctes,
      params: values,
      hooked: hooks.length > 0,
      size: stamped.length + hooks.length,
      batch: (rows, hooked) => ({
        sessionId,
        rows: rows.map((row) => ({ seq: Number(row.seq), epoch: options.epoch ?? null, type: row.type, payload: row.payload })).sort((a, b) => a.seq - b.seq),
        ...(hooked && hooked.length > 0 ? { webhookEndpoints: hooked } : {}),
      }),
    };
  }

  /**
   * Whether the session's outbox holds an event of `type` whose payload contains `fields`: how an
   * event announced at most once (per turn and reason, say) knows it was, across runs and
   * takeovers. Call under the session lock, as append is. Only rare events ask (a scan of the
   * session's rows of that type), never a turn's hot path.
   */
  async hasEvent(manager: EntityManager, sessionId: string, type: string, fields: Record<string, string>): Promise<boolean> {
    const rows = (await manager.query(`SELECT 1 FROM session_events WHERE session_id = $1 AND type = $2 AND payload::jsonb @> $3::jsonb LIMIT 1`, [
      sessionId,
      type,
      JSON.stringify(fields),
    ])) as unknown[];
    return rows.length > 0;
  }

  /**
   * Publishes committed rows of a session: the batch just committed when the stream is caught up,
   * else every row the stream lacks, in order. Never throws: what is not published now, the relay
   * publishes later.
   */
  async flush(sessionId: string, batch?: OutboxBatch): Promise<FlushResult> {
    try {
      if (batch && batch.rows.length > 0) {
        const last = await this.publisher.publishDurable(sessionId, batch.rows);
        if (last >= batch.rows[batch.rows.length - 1]!.seq) return { complete: true };
      }
      return await this.catchUp(sessionId);
    } catch (error) {
      this.log.warn(`events of session ${sessionId} wait for the relay: ${String(error)}`);
      return { complete: false };
    }
  }

  /**
   * One relay window: the sessions with rows inserted in (relayed_until - margin, upto] that the
   * stream lacks, where upto is one relay interval ago, and never later than the start of the
   * oldest transaction still open (a row's created_at is never earlier than its transaction's
   * start, so no row can commit into a window already passed). `work` catches the lagging sessions
   * up; the window moves on when all are. A window with more rows than one pass reads moves on to
   * the last row read. Only one relay holds the window at a time; null when another one does, or
   * it moved recently.
   */
  async relayWindow(minAgeMs: number, work: (lagging: LaggingSession[]) => Promise<boolean>): Promise<number | null> {
    return this.dataSource.transaction(async (manager) => {
      const [state] = (await manager.query(
        prepared(`SELECT relayed_until,
                least(now() - make_interval(secs => $1::double precision / 1000),
                      coalesce((SELECT min(xact_start) FROM pg_stat_activity
                                WHERE datname = current_database() AND usename = current_user AND xact_start IS NOT NULL AND pid <> pg_backend_pid()), 'infinity')) AS upto
         FROM outbox_relay_state WHERE id = 1 AND relayed_until < now() - make_interval(secs => $1::double precision / 1000)
         FOR UPDATE SKIP LOCKED`),
        [minAgeMs],
      )) as { relayed_until: Date; upto: Date }[];
      if (!state || state.upto <= state.relayed_until) return null;
      const rows = (await manager.query(
        prepared(`SELECT session_id, seq, nudge, created_at FROM session_events
         WHERE created_at > $1::timestamptz - make_interval(secs => $3::double precision / 1000) AND created_at <= $2
         ORDER BY created_at LIMIT $4`),
        [state.relayed_until, state.upto, RELAY_WINDOW_MARGIN_MS, RELAY_MAX_ROWS],
      )) as { session_id: string; seq: string; nudge: boolean; created_at: Date }[];
      const upto = rows.length === RELAY_MAX_ROWS ? rows[rows.length - 1]!.created_at : state.upto;
      const recent = new Map<string, { maxSeq: number; nudge: boolean }>();
      for (const row of rows) {
        const seen = recent.get(row.session_id) ?? { maxSeq: 0, nudge: false };
        recent.set(row.session_id, { maxSeq: Math.max(seen.maxSeq, Number(row.seq)), nudge: seen.nudge || row.nudge });
      }
      const ids = [...recent.keys()];
      const published = ids.length === 0 ? [] : await this.publisher.lastSeqs(ids);
      const lagging = ids
        .filter((id, i) => (published[i] ?? -1) < recent.get(id)!.maxSeq)
        .map((id) => ({ sessionId: id, nudge: recent.get(id)!.nudge }));
      const caughtUp = lagging.length === 0 || (await work(lagging));
      if (caughtUp) await manager.query(prepared(`UPDATE outbox_relay_state SET relayed_until = $1 WHERE id = 1`), [upto]);
      return lagging.length;
    });
  }

  /**
   * The relay lag: how long ago the relay watermark is (every row committed before it is confirmed
   * in its stream). About one to two relay intervals while the relay keeps up; it grows while
   * events cannot be published (Redis down, no worker relaying) or a long transaction holds the
   * window back. Null before any relay state exists.
   */
  async relayLagSeconds(): Promise<number | null> {
    const [row] = (await this.dataSource.query(
      prepared(`SELECT extract(epoch FROM now() - relayed_until)::float8 AS lag FROM outbox_relay_state WHERE id = 1`),
    )) as { lag: number | string | null }[];
    return row?.lag === null || row?.lag === undefined ? null : Math.max(0, Number(row.lag));
  }

  /**
   * Deletes outbox rows older than the replay window (no cursor can ask for them any more) that the
   * relay has confirmed, oldest first, keeping each session's newest row so its numbering goes on.
   * Returns how many rows were deleted.
   */
  async prune(retentionSeconds: number, limit: number): Promise<number> {
    const [, deleted] = (await this.dataSource.query(
      prepared(`DELETE FROM session_events
       WHERE (session_id, seq) IN (
         SELECT s.session_id, s.seq FROM session_events s
         WHERE s.created_at < least((SELECT relayed_until FROM outbox_relay_state WHERE id = 1), now() - make_interval(secs => $1::double precision))
           AND EXISTS (SELECT 1 FROM session_events n WHERE n.session_id = s.session_id AND n.seq > s.seq)
         ORDER BY s.created_at LIMIT $2)`),
      [retentionSeconds, limit],
    )) as [unknown, number];
    return deleted;
  }

  /**
   * Publishes every row the session's stream lacks: those after the stream's sequence number, or,
   * when the stream lost it (new, expired, or Redis lost its data), the rows of the relay's recent
   * window (older ones were confirmed in the stream before); subscribers see the jump and resync.
   */
  private async catchUp(sessionId: string): Promise<FlushResult> {
    let [from] = await this.publisher.lastSeqs([sessionId]);
    let floor = -1;
    if (from === null || from === undefined) {
      const [first] = (await this.dataSource.query(
        prepared(`SELECT min(seq) AS seq FROM session_events
         WHERE session_id = $1 AND created_at > (SELECT relayed_until FROM outbox_relay_state WHERE id = 1) - make_interval(secs => $2::double precision / 1000)`),
        [sessionId, RELAY_WINDOW_MARGIN_MS],
      )) as { seq: string | null }[];
      if (first?.seq === null || first?.seq === undefined) return { complete: true };
      floor = Number(first.seq) - 1;
      from = floor;
    }
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const rows = (await this.dataSource.query(
        prepared(`SELECT seq, epoch, type, payload FROM session_events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`),
        [sessionId, from, RELAY_PAGE],
      )) as { seq: string; epoch: string | null; type: string; payload: string }[];
      if (rows.length === 0) return { complete: true };
      const last = await this.publisher.publishDurable(
        sessionId,
        rows.map((row) => ({ seq: Number(row.seq), epoch: row.epoch === null ? null : Number(row.epoch), type: row.type, payload: row.payload })),
        floor,
      );
      // The stream is behind a row another flusher has not published yet, or a writer raced us.
      if (last < Number(rows[rows.length - 1]!.seq)) return { complete: false };
      if (rows.length < RELAY_PAGE) return { complete: true };
      from = last;
      floor = -1;
    }
    return { complete: false };
  }
}
