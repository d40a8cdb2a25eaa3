import { randomBytes } from 'node:crypto';
import { deleteRowsBatch, prepared, preparedUpTo, type RowStorage, rowStorageOf, rowStorageSql, type StorageQueryable } from '#libs/database';
import { Injectable, Logger } from '@nestjs/common';
import { ThrottledLog } from '#libs/config';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { EventPublisher, type DurableRow } from './event-publisher.js';
import { type OutboxAppend, type OutboxContribution, OutboxSubscribers } from './outbox-subscribers.js';
import type { PublicEvent } from './event.types.js';
import type { OutgoingEvent } from './outgoing-events.js';

/** Outbox rows committed together, ready to be published. */
export interface OutboxBatch {
  sessionId: string;
  rows: DurableRow[];
  /** What the outbox's subscribers wrote for the batch, by subscriber name (webhooks: the endpoints to nudge after commit). */
  fanOut?: Record<string, string[]>;
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
  /** Rows the statement's text grows with (for `preparedUpTo`). */
  size: number;
  /** The CTE that inserts the rows and returns (seq, type, payload). */
  rowsCte: string;
  /** A SQL expression of what the outbox's subscribers wrote (a json object by subscriber name, or null). */
  fanOut: string;
  /** The committed batch from the rows `rowsCte` returned and the value of `fanOut`. */
  batch(rows: { seq: string | number; type: string; payload: string; epoch?: string | number | null }[], fanOut: Record<string, unknown> | null): OutboxBatch;
}

/** An append as CTEs of a caller's statement (see `EventOutbox.insertion`). */
export interface Insertion {
  /** The CTEs, to follow WITH. */
  ctes: string;
  /** The query that answers the inserted rows with what the subscribers wrote (for `batchOf`). */
  select: string;
  /** What the subscribers wrote, as one SQL expression (a json object by subscriber name, or null). */
  fanOut: string;
  values: unknown[];
  /** Rows the statement's text grows with (for `preparedUpTo`). */
  rows: number;
}

export interface FlushResult {
  /** Whether every committed row of the session is now in the stream. */
  complete: boolean;
}

/** A row an outbox insert answered. */
export interface OutboxRow {
  seq: string;
  type: string;
  payload: string;
  /** The fencing epoch the row was written with (computed by the statement when a CTE inserted the run). */
  epoch?: string | number | null;
  /** What the subscribers wrote (on every row alike): their results by name, null when none contributed. */
  fan_out?: Record<string, unknown> | null;
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
    private readonly subscribers: OutboxSubscribers,
  ) {}

  /**
   * Appends events to the session's outbox. Call inside the transaction that makes them true,
   * holding the session lock: the next sequence numbers are read from the table itself.
   */
  async append(manager: EntityManager, sessionId: string, events: OutgoingEvent[], options: AppendOptions = {}): Promise<OutboxBatch> {
    if (events.length === 0) return { sessionId, rows: [] };
    const insert = this.insertion(sessionId, events, options, 1);
    const rows = (await manager.query(preparedUpTo(insert.rows, `WITH ${insert.ctes}\n       ${insert.select}`), insert.values)) as OutboxRow[];
    return this.batchOf(sessionId, rows, options);
  }

  /**
   * The append as CTEs of a caller's statement, its parameters numbered from `first`: `ctes` (to
   * follow WITH), and `select`, the query that answers the inserted rows (for `batchOf`). `gate`:
   * a CTE of the statement whose rows the insert is joined with, so that it inserts nothing when
   * that CTE has no row (the caller's guarded session update). The sequence numbers are read from
   * the table with the statement's snapshot: the statement must hold the session lock from its
   * start (as `append` does, after the lock), or fail on the (session_id, seq) key when another
   * writer appended meanwhile. `epochSql` stands for the epoch where the statement itself computes
   * it (a run another CTE inserts). `events` must not be empty.
   */
  insertion(sessionId: string, events: OutgoingEvent[], options: AppendOptions & { epochSql?: string }, first: number, gate?: string): Insertion {
    const stamped = this.publisher.stamp(sessionId, events);
    const $ = (n: number): string => `$${first + n - 1}`;
    // A token no content can hold (random per append) stands for the sequence number until the
    // insert knows it: one statement, no JSON processing in Postgres.
    const token = `__yuxi_seq_${randomBytes(12).toString('hex')}__`;
    const payloads = stamped.map((event) => JSON.stringify({ ...event, yuxi: { ...(event.yuxi as object), seq: token } }));
    const values: unknown[] = [sessionId, options.epoch ?? null, options.nudge ?? false, `"${token}"`];
    const tuples = stamped.map((event, i) => {
      values.push(event.event_id, event.type, payloads[i]);
      const at = values.length;
      return `(${$(at - 2)}, ${$(at - 1)}, ${$(at)}::text, ${i + 1})`;
    });
    const ctes = [
      `ev_base AS (SELECT coalesce(max(seq), 0) AS n FROM session_events WHERE session_id = ${$(1)})`,
      `ev_ins AS (INSERT INTO session_events (session_id, seq, event_id, type, epoch, nudge, payload)
       SELECT ${$(1)}, ev_base.n + e.ord, e.event_id, e.type, ${options.epochSql ? `coalesce(${options.epochSql}, ${$(2)})` : $(2)}, ${$(3)}, replace(e.payload, ${$(4)}, (ev_base.n + e.ord)::text)
       FROM ev_base, ${gate === undefined ? '' : `${gate}, `}(VALUES ${tuples.join(', ')}) AS e(event_id, type, payload, ord)
       RETURNING seq, type, payload, event_id, epoch)`,
    ];
    const own = values.length;
    // What the subscribers add (webhooks: their deliveries), in the same statement, so by the same
    // transaction as the facts; most batches concern none of them and keep the plain insert.
    const fanOut = this.fanOut(sessionId, stamped, token, values, $);
    ctes.push(...fanOut.flatMap((f) => f.ctes));
    const results = fanOut.length === 0 ? 'NULL::json' : `json_build_object(${fanOut.map((f) => `'${f.name}', (${f.result})`).join(', ')})`;
    return { ctes: ctes.join(',\n       '), select: `SELECT seq, type, payload, epoch, ${results} AS fan_out FROM ev_ins`, fanOut: results, values, rows: stamped.length + values.length - own };
  }

  /** What the outbox's subscribers add to one append's statement, their values numbered as `$` does. */
  private fanOut(sessionId: string, events: PublicEvent[], seqToken: string, values: unknown[], $: (n: number) => string): (OutboxContribution & { name: string })[] {
    const append: OutboxAppend = {
      sessionId,
      events,
      seqToken,
      seqTokenParam: $(4),
      sessionParam: $(1),
      rowsCte: 'ev_ins',
      param: (value) => {
        values.push(value);
        return $(values.length);
      },
    };
    return this.subscribers.all().flatMap((subscriber) => {
      const contribution = subscriber.contribute(append);
      return contribution ? [{ ...contribution, name: subscriber.name }] : [];
    });
  }

  /** The session's outbox rows (its durable events, what the stream replays) and their bytes, by the (session_id, seq) key. */
  async storage(sessionId: string, db: StorageQueryable = this.dataSource): Promise<RowStorage> {
    const events = await rowStorageSql(db, 'session_events', 'FROM session_events t WHERE t.session_id = $1');
    const [row] = (await db.query(`SELECT ${events} AS events`, [sessionId])) as { events: unknown }[];
    return rowStorageOf(row?.events);
  }

  /**
   * The purge of deleted sessions (libs/retention SessionPurge): up to `limit` of their outbox rows,
   * newest first, so what is left of a session's stream stays contiguous from seq 1 (a purge killed
   * midway leaves a shorter stream, never a gap). One statement on the primary key.
   */
  purgeSessions(sessionIds: string[], limit: number): Promise<RowStorage> {
    return deleteRowsBatch(this.dataSource, 'session_events', 't.session_id = ANY($1::uuid[])', [sessionIds], limit, 't.session_id, t.seq DESC');
  }

  /** After the purge removed their sessions rows: their Redis streams go too (EventPublisher.dropStreams). */
  dropStreams(sessionIds: string[]): Promise<void> {
    return this.publisher.dropStreams(sessionIds);
  }

  /** Whether a write failed because another writer appended to the session's outbox after the write's snapshot (its `insertion` numbered from a stale maximum). */
  static isSeqRace(error: unknown): boolean {
    const driverError = (error as { driverError?: { code?: string; constraint?: string } } | null)?.driverError;
    return driverError?.code === '23505' && driverError.constraint === 'session_events_pkey';
  }

  /**
   * The append as CTEs of a statement a caller composes (SessionTransactions), parameters numbered
   * from $1: `rowsCte` returns (seq, type, payload) and `fanOut` is what the subscribers wrote.
   * Null when there is nothing to append.
   */
  appendWrite(sessionId: string, events: OutgoingEvent[], options: AppendOptions & { epochSql?: string } = {}): OutboxWrite | null {
    if (events.length === 0) return null;
    const insert = this.insertion(sessionId, events, options, 1);
    return {
      ctes: [insert.ctes],
      params: insert.values,
      size: insert.rows,
      rowsCte: 'ev_ins',
      fanOut: insert.fanOut,
      batch: (rows, fanOut) => this.batchOf(sessionId, rows.map((row) => ({ seq: String(row.seq), type: row.type, payload: row.payload, epoch: row.epoch ?? null, fan_out: fanOut })), options),
    };
  }

  /** The batch of the rows an `insertion` answered, in sequence order, ready to be published after commit. */
  batchOf(sessionId: string, rows: OutboxRow[], options: AppendOptions = {}): OutboxBatch {
    const kept: Record<string, string[]> = {};
    for (const [name, value] of Object.entries(rows[0]?.fan_out ?? {})) if (Array.isArray(value) && value.length > 0) kept[name] = value.map(String);
    return {
      sessionId,
      // The epoch as written (a claim's rows take their new run's epoch from the statement itself):
      // publishing them raises the session's fence to it, so an older run's live deltas stop here.
      rows: rows.map((row) => ({ seq: Number(row.seq), epoch: row.epoch === undefined || row.epoch === null ? (options.epoch ?? null) : Number(row.epoch), type: row.type, payload: row.payload })).sort((a, b) => a.seq - b.seq),
      ...(Object.keys(kept).length > 0 ? { fanOut: kept } : {}),
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
   * The sessions with outbox rows inserted in (after, upto], in insert order, at most `limit` rows
   * read: upto is now, never later than the start of the oldest transaction still open (as
   * `relayWindow`: a row's created_at is never earlier than its transaction's start, so none can
   * commit into a window already passed), or the last row read when the window had more (rows of
   * one statement, one session's, may share that instant). For storage accounting (which sessions
   * stored something since it last looked); through the created_at index, one statement.
   */
  async sessionsWithEvents(after: Date, limit: number, db: StorageQueryable = this.dataSource): Promise<{ sessionIds: string[]; upto: Date; full: boolean }> {
    const rows = (await db.query(
      prepared(`WITH bound AS (
         SELECT least(now(), coalesce((SELECT min(xact_start) FROM pg_stat_activity
                  WHERE datname = current_database() AND usename = current_user AND xact_start IS NOT NULL AND pid <> pg_backend_pid()), 'infinity')) AS upto)
       SELECT e.session_id, e.created_at, bound.upto FROM bound
       LEFT JOIN LATERAL (SELECT session_id, created_at FROM session_events
         WHERE created_at > $1 AND created_at <= bound.upto
         ORDER BY created_at LIMIT $2) AS e ON true`),
      [after, limit],
    )) as { session_id: string | null; created_at: Date | null; upto: Date }[];
    const read = rows.filter((row) => row.session_id !== null);
    const upto = read.length === limit ? read[read.length - 1]!.created_at! : rows[0]!.upto;
    return { sessionIds: [...new Set(read.map((row) => row.session_id!))], upto: upto < after ? after : upto, full: read.length === limit };
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
   * The window goes by the lifecycle clock, as every retention does (tests and the storage bench move
   * it to see what a session keeps once its events aged out); what the relay confirmed is real time.
   * Returns how many rows were deleted.
   */
  async prune(retentionSeconds: number, limit: number): Promise<number> {
    const [, deleted] = (await this.dataSource.query(
      prepared(`DELETE FROM session_events
       WHERE (session_id, seq) IN (
         SELECT s.session_id, s.seq FROM session_events s
         WHERE s.created_at < least((SELECT relayed_until FROM outbox_relay_state WHERE id = 1), lifecycle_now() - make_interval(secs => $1::double precision))
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
