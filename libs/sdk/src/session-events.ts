import { AgentsConnectionError, AgentsProtocolError } from './errors.js';
import { backoffMs, sleep } from './retry.js';
import { parseSse, type SseMessage, type SseRecord } from './sse-parser.js';
import { toError, type Transport } from './transport.js';
import type { InputDetail, Item, SessionEvent, SessionEventOf, Turn } from './types.js';

export interface SessionEventsOptions {
  /**
   * Resume strictly after this cursor (an event's SSE `id:`, e.g. a previous stream's
   * `lastEventId`, which is the last event its consumer finished with).
   */
  lastEventId?: string;
  /**
   * Follow this turn: yield only what concerns it (see SessionEventStream) and end once it reaches
   * completed, failed or cancelled.
   */
  untilTurnId?: string;
  /**
   * Follow the turn that consumes this input (a receipt's `input_id`): yield only what concerns the
   * input and that turn, and end once the turn reaches a terminal state, or when the input is
   * cancelled before any turn takes it.
   */
  untilInputId?: string;
  /** Aborting ends the iteration with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Called on `yuxi.session.resync`, before that event is yielded, with the target turn and its
   * items read back: events were missed, so rebuild what you show from these, then go on. What it
   * throws ends the iteration with that error.
   */
  onResync?: (snapshot: ResyncSnapshot) => void | Promise<void>;
  /** Reconnections in a row that deliver no event before the iteration fails (default 10). */
  maxReconnects?: number;
  /** First reconnection delay (default 500 ms; doubled each time, capped by maxReconnectDelayMs, 15 s). A server `retry:` overrides it. */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
  /**
   * A connection that brings no byte for this long (no answer, no event, no heartbeat) is taken
   * for dead and replaced (default 60 s). Keep it above the server's heartbeat interval (SSE_HEARTBEAT_MS, 15 s
   * by default). Time the consumer spends on an event does not count.
   */
  idleTimeoutMs?: number;
}

/** What a resync re-read: the turn being followed (or the session's current turn) and its items, oldest first. */
export interface ResyncSnapshot {
  event: SessionEventOf<'yuxi.session.resync'>;
  /** Null when there is no such turn yet (an input still queued, a session without turns). */
  turn: Turn | null;
  items: Item[];
}

export type StreamEnd = 'turn_terminal' | 'input_cancelled';

/** What the iterator reads back through the client (kept narrow: the iterator is not the client). */
export interface SessionReader {
  transport: Transport;
  turn(sessionId: string, turnId: string, signal?: AbortSignal): Promise<Turn>;
  input(sessionId: string, inputId: string, signal?: AbortSignal): Promise<InputDetail>;
  currentTurnId(sessionId: string, signal?: AbortSignal): Promise<string | null>;
  allTurnItems(sessionId: string, turnId: string, signal?: AbortSignal): Promise<Item[]>;
}

type TerminalEvent = SessionEventOf<'agent.session.turn.completed' | 'agent.session.turn.failed' | 'agent.session.turn.cancelled'>;
const TERMINAL_EVENTS = new Set<SessionEvent['type']>(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);
const TERMINAL_STATUSES = new Set<string>(['completed', 'failed', 'cancelled']);
/** Event ids remembered to drop repeats; a repeat can only come from a recent replay. */
const REMEMBERED_IDS = 10_000;

/** What to do with one received event. */
interface Step {
  event: SessionEvent;
  /** Its SSE `id:` (the cursor after it). */
  id: string | undefined;
  /** Whether the consumer gets it (not a repeat, and it concerns what is followed). */
  deliver: boolean;
  /** Whether the iteration ends once it is handled. */
  end: boolean;
}

/**
 * The connection failed (a cut, a reset, a silent connection replaced): reconnect. Only what
 * opening the connection and reading its body throw becomes this; anything the iterator or its
 * consumer throws while handling an event ends the iteration as it is.
 */
class ConnectionLost extends Error {}

/**
 * The session event stream as an async iterable, with the API's reconnection rules built in:
 * reconnects with `Last-Event-ID` after a cut or an ended stream, never yields an event twice,
 * re-reads the turn and its items on `yuxi.session.resync`, and (with untilTurnId / untilInputId)
 * ends when the turn reaches its terminal state: with its terminal event, or when a resync's
 * re-read finds it already terminal (that event was missed).
 *
 * Following a turn (untilTurnId / untilInputId), only what concerns it is yielded:
 * - the turn's own events (every event whose `turn_id` is the followed turn's); with untilInputId
 *   the turn is known from the `yuxi.session.run.created` whose `run.input_ids` hold the input
 *   (yielded, as the first event of the turn the iterator shows: a steer that joins a turn in
 *   progress is followed from the run that takes it);
 * - `yuxi.session.event.accepted` of the followed input, and of controls aimed at the followed
 *   turn (its receipt's `turn_id`);
 * - every `yuxi.session.resync`.
 * Everything else (`agent.session.created`, other turns' events, other inputs' acceptances) is
 * skipped: without a cursor the server replays the session's retained history, and an earlier
 * turn's text is not this turn's. Skipped events still move `lastEventId`. Without untilTurnId and
 * untilInputId every event is yielded.
 *
 * `lastEventId` is the cursor of the last event the consumer finished with: an event counts as
 * handled when the loop asks for the next one, so an event the loop left (break, return, or a
 * throw) is delivered again by a stream resumed from `lastEventId`, as the API asks (keep the
 * id of the last event successfully processed).
 *
 * Without lastEventId the server replays the session from the start of its window (or resyncs),
 * so nothing is checked before subscribing. With lastEventId the turn may have ended before the
 * cursor: it is read first, and when it is already terminal the iteration ends at once, with the
 * turn in `turn`. A reconnection needs no such check: the server resumes strictly after the
 * cursor without gaps, or says resync.
 *
 * Only a failed connection is retried. What onResync throws, what the consumer's loop throws, and
 * failures of the reads a resync makes (after their own retries) end the iteration with that error.
 *
 * Single use: iterate it once.
 */
export class SessionEventStream implements AsyncIterable<SessionEvent> {
  /** The `id:` of the last event the consumer finished with (or skipped): resume from here (another stream's `lastEventId`). */
  lastEventId: string | undefined;
  /** The turn being followed, once known. */
  turnId: string | null;
  /** The followed turn as last read back (before subscribing, or on a resync). */
  turn: Turn | null = null;
  /** The last resync's re-read, if any. */
  lastResync: ResyncSnapshot | null = null;
  /** Why the iteration ended by itself, if it did. */
  ended: StreamEnd | null = null;

  private readonly seen = new Set<string>();
  private lastSeq = 0;
  private started = false;

  constructor(
    private readonly reader: SessionReader,
    readonly sessionId: string,
    private readonly options: SessionEventsOptions = {},
  ) {
    this.lastEventId = options.lastEventId;
    this.turnId = options.untilTurnId ?? null;
  }

  [Symbol.asyncIterator](): AsyncIterator<SessionEvent> {
    if (this.started) throw new Error('A SessionEventStream is iterated once; open another with client.sessions.events()');
    this.started = true;
    return this.run();
  }

  private get following(): boolean {
    return this.options.untilTurnId !== undefined || this.options.untilInputId !== undefined;
  }

  private async *run(): AsyncGenerator<SessionEvent> {
    const { signal } = this.options;
    const maxReconnects = this.options.maxReconnects ?? 10;
    const idleTimeoutMs = this.options.idleTimeoutMs ?? 60_000;
    const backoff = { baseDelayMs: this.options.reconnectDelayMs ?? 500, maxDelayMs: this.options.maxReconnectDelayMs ?? 15_000 };
    if (this.options.lastEventId !== undefined && (await this.settled(signal))) return;
    let failures = 0;
    let serverRetryMs: number | null = null;
    for (;;) {
      signal?.throwIfAborted();
      const connection = new AbortController();
      // Built before anything is held: a request that cannot be built (a header value that is not
      // Latin-1, a bad base URL) is a mistake thrown as is, not a lost connection.
      const request = this.reader.transport.streamRequest(`/api/v1/agents/sessions/${encodeURIComponent(this.sessionId)}/events`, this.lastEventId, connection.signal);
      const abort = () => connection.abort(signal?.reason);
      signal?.addEventListener('abort', abort, { once: true });
      let wait: number | null = null;
      let cause: unknown = null;
      let idle = false;
      const onIdle = () => {
        idle = true;
        connection.abort(new Error('The event stream went silent'));
      };
      /** What a network step threw: the abort's reason, a lost connection, or a mistake to throw as is. */
      const classify = (error: unknown): unknown => {
        if (signal?.aborted) return signal.reason;
        return idle || isNetworkError(error) ? new ConnectionLost('The event stream connection failed', { cause: error }) : error;
      };
      try {
        // The answer's head is bound by the same clock: a connection can die before it, too.
        const headTimer = setTimeout(onIdle, idleTimeoutMs);
        const response = await this.reader.transport
          .send(request)
          .catch((error: unknown) => Promise.reject(classify(error)))
          .finally(() => clearTimeout(headTimer));
        if (!response.ok) {
          const text = await response.text().catch((error: unknown) => Promise.reject(classify(error)));
          const error = toError(response, text);
          wait = this.reader.transport.retryDelay(error, failures + 1);
          if (wait === null) throw error;
          cause = error;
        } else if (!response.body) {
          throw new AgentsProtocolError('The event stream answered without a body', response.status, '');
        } else {
          for await (const record of readRecords(response.body, idleTimeoutMs, onIdle, classify)) {
            if (record.kind === 'retry') {
              serverRetryMs = record.ms;
              continue;
            }
            const step = await this.accept(record.message, signal);
            if (step.deliver) yield step.event;
            // Resumed: the consumer is done with it (or it was not for the consumer).
            this.handled(step);
            failures = 0;
            if (step.end) return;
          }
          // The server ended the stream (a shutdown says `retry:` first): resume elsewhere.
        }
      } catch (error) {
        if (!(error instanceof ConnectionLost)) throw error;
        cause = error.cause;
      } finally {
        signal?.removeEventListener('abort', abort);
        connection.abort();
      }
      failures++;
      if (failures > maxReconnects) {
        throw new AgentsConnectionError(`The event stream of session ${this.sessionId} failed ${failures} times in a row without an event`, { cause });
      }
      // A server `retry:` is the least it asked for; repeated failures still back off.
      await sleep(wait ?? Math.max(serverRetryMs ?? 0, backoffMs(backoff, failures)), signal);
    }
  }

  /** One parsed message: whether the consumer gets it, and whether the iteration ends with it. Nothing is marked seen here. */
  private async accept(message: SseMessage, signal: AbortSignal | undefined): Promise<Step> {
    let event: SessionEvent;
    try {
      event = JSON.parse(message.data) as SessionEvent;
    } catch {
      throw new AgentsProtocolError(`An event that is not JSON (${message.event})`, 200, message.data.slice(0, 2_000));
    }
    // Already delivered (a replay that overlaps): only the cursor moves.
    if (this.isRepeat(event)) return { event, id: message.id, deliver: false, end: false };
    if (event.type === 'yuxi.session.resync') {
      // Events were missed: read back before moving the cursor past the gap.
      const snapshot = await this.resync(event, signal);
      this.lastResync = snapshot;
      await this.options.onResync?.(snapshot);
      return { event, id: message.id, deliver: true, end: this.ended !== null };
    }
    await this.follow(event, signal);
    const end = this.ended !== null || (isTerminal(event) && event.turn_id === this.turnId);
    if (end) this.ended ??= 'turn_terminal';
    return { event, id: message.id, deliver: this.concerns(event), end };
  }

  /** Whether the consumer gets this event (see the class comment). */
  private concerns(event: SessionEvent): boolean {
    if (!this.following) return true;
    if ('turn_id' in event) return this.turnId !== null && event.turn_id === this.turnId;
    if (event.type === 'yuxi.session.event.accepted') {
      const { input_id: inputId, turn_id: turnId } = event.receipt;
      return (inputId !== null && inputId === this.options.untilInputId) || (turnId !== null && turnId === this.turnId);
    }
    return false;
  }

  /** Dedupe by event_id, and for durable events by `yuxi.seq` (1, 2, 3… per session). */
  private isRepeat(event: SessionEvent): boolean {
    if (this.seen.has(event.event_id)) return true;
    const seq = seqOf(event);
    return seq !== null && seq <= this.lastSeq;
  }

  /** The event is done with: remembered as seen, and the cursor moves past it. */
  private handled(step: Step): void {
    this.lastEventId = step.id ?? this.lastEventId;
    const seq = seqOf(step.event);
    if (seq !== null && seq > this.lastSeq) this.lastSeq = seq;
    this.seen.add(step.event.event_id);
    if (this.seen.size > REMEMBERED_IDS) this.seen.delete(this.seen.values().next().value as string);
  }

  /** Learns which turn took the followed input, and whether the input was cancelled instead. */
  private async follow(event: SessionEvent, signal: AbortSignal | undefined): Promise<void> {
    const inputId = this.options.untilInputId;
    if (inputId === undefined || this.turnId !== null) return;
    if (event.type === 'yuxi.session.run.created' && event.run.input_ids.includes(inputId)) {
      this.turnId = event.turn_id;
    } else if (event.type === 'yuxi.session.event.accepted' && event.receipt.input_id === inputId) {
      // The input's own acceptance, or a control aimed at it (cancel_input, promote): ask where it
      // stands. Not the turn: its events follow in order on this stream.
      await this.locateTurn(signal);
    }
  }

  /** For untilInputId: the turn that took the input, or `ended` when the input was cancelled. */
  private async locateTurn(signal: AbortSignal | undefined): Promise<void> {
    const inputId = this.options.untilInputId;
    if (this.turnId !== null || inputId === undefined) return;
    const input = await this.reader.input(this.sessionId, inputId, signal);
    if (input.status === 'cancelled') this.ended = 'input_cancelled';
    else this.turnId = input.turn_id;
  }

  /** Reads the followed input and turn; true (and `ended` set) when there is nothing left to wait for. */
  private async settled(signal: AbortSignal | undefined): Promise<boolean> {
    await this.locateTurn(signal);
    if (this.ended !== null) return true;
    if (this.turnId === null) return false;
    this.turn = await this.reader.turn(this.sessionId, this.turnId, signal);
    if (!TERMINAL_STATUSES.has(this.turn.status)) return false;
    this.ended = 'turn_terminal';
    return true;
  }

  private async resync(event: SessionEventOf<'yuxi.session.resync'>, signal: AbortSignal | undefined): Promise<ResyncSnapshot> {
    if (this.following) {
      await this.settled(signal);
    } else {
      const current = await this.reader.currentTurnId(this.sessionId, signal);
      this.turn = current === null ? null : await this.reader.turn(this.sessionId, current, signal);
    }
    const turn = this.turn !== null && (!this.following || this.turn.id === this.turnId) ? this.turn : null;
    const items = turn === null ? [] : await this.reader.allTurnItems(this.sessionId, turn.id, signal);
    return { event, turn, items };
  }
}

/**
 * The SSE records of a body. Only what reading the body throws passes through `classify` (a cut
 * becomes ConnectionLost): what the loop consuming these records does never comes back in here.
 */
async function* readRecords(body: AsyncIterable<Uint8Array>, idleTimeoutMs: number, onIdle: () => void, classify: (error: unknown) => unknown): AsyncGenerator<SseRecord> {
  const records = parseSse(watchIdle(body, idleTimeoutMs, onIdle))[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<SseRecord>;
      try {
        next = await records.next();
      } catch (error) {
        throw classify(error);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    try {
      await records.return(undefined);
    } catch {
      // The body already failed: nothing to release.
    }
  }
}

/**
 * The body's chunks, calling `onIdle` when one takes longer than `ms` to arrive. The clock runs
 * only while a chunk is awaited, not while the consumer works on what it was given.
 */
async function* watchIdle(body: AsyncIterable<Uint8Array>, ms: number, onIdle: () => void): AsyncGenerator<Uint8Array> {
  const chunks = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      const timer = setTimeout(onIdle, ms);
      let next: IteratorResult<Uint8Array>;
      try {
        next = await chunks.next();
      } finally {
        clearTimeout(timer);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    try {
      await chunks.return?.();
    } catch {
      // The body already failed (a cut or an abort): nothing to release.
    }
  }
}

function isTerminal(event: SessionEvent): event is TerminalEvent {
  return TERMINAL_EVENTS.has(event.type);
}

function seqOf(event: SessionEvent): number | null {
  const seq = (event.yuxi as { seq?: unknown } | undefined)?.seq;
  return typeof seq === 'number' ? seq : null;
}

/** fetch rejects with a TypeError when the connection fails; a body cut mid-stream errors the same way. */
function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError || (error instanceof Error && ['ECONNRESET', 'UND_ERR_SOCKET', 'ECONNREFUSED', 'EPIPE'].includes((error as { code?: string }).code ?? ''));
}
