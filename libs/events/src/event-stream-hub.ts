import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { type RedisClient, ThrottledLog } from '#libs/config';
import { newId } from '#libs/database';
import { compareStreamIds, type StreamPosition } from './cursor.js';
import { EventOutbox } from './event-outbox.js';
import { EVENTS_REDIS, EVENTS_REDIS_BLOCKING, type ReaderConnections } from './redis.providers.js';
import { StreamKeys } from './stream-keys.js';
import { resyncFrame, type Sink, Subscription, toFrames } from './stream-frames.js';

interface StreamState {
  /** The last entry read live, and the last durable seq a subscriber in step with it has seen. */
  position: string;
  seq: number | null;
  subscribers: Set<Subscription>;
  /** Its reader group (StreamKeys.group). */
  group: number;
}

/**
 * One blocking XREAD loop over the watched sessions of one reader group, on its own connection.
 * On one server there is one group, so one reader, as there always was; on a cluster one per
 * event-stream shard that has subscribers here (a multi-key XREAD must stay in one slot).
 */
class Reader {
  readonly sessions = new Set<string>();
  // From the start of its private stream, not '$': a wake-up written (on another connection)
  // before this reader's first XREAD reaches Redis is still seen, instead of the read blocking for
  // BLOCK_MS without the session that woke it. The stream holds one entry at most.
  wakePosition = '0-0';
  loop: Promise<void> | null = null;
  wake: (() => void) | null = null;

  constructor(
    readonly connection: RedisClient,
    /**
     * A private stream the reader always includes: adding to it wakes a blocked XREAD so a newly
     * watched session joins the read (unlike CLIENT UNBLOCK, it survives reconnects and new client
     * ids). It shares the group's slot (StreamKeys.wake).
     */
    readonly wakeKey: string,
  ) {}
}

export interface SubscribeResult {
  close: () => void;
}

const CATCH_UP_PAGE = 500;
const BLOCK_MS = 30_000;

/**
 * Multiplexes all SSE subscribers of this process over one blocking XREAD connection per reader
 * group (one on a single server; at most one per event-stream shard on a cluster), so Redis
 * connections do not grow with clients. A new subscriber first catches up with XRANGE from its
 * cursor, buffering live entries meanwhile, then switches to live delivery.
 */
@Injectable()
export class EventStreamHub implements OnApplicationShutdown {
  private readonly logger = new Logger(EventStreamHub.name);
  private readonly readFailures = new ThrottledLog(this.logger);
  private readonly streams = new Map<string, StreamState>();
  private readonly readers = new Map<number, Reader>();
  private readonly hubId = newId();
  private running = true;

  constructor(
    @Inject(EVENTS_REDIS) private readonly redis: RedisClient,
    @Inject(EVENTS_REDIS_BLOCKING) private readonly connections: ReaderConnections,
    private readonly outbox: EventOutbox,
    private readonly keys: StreamKeys,
  ) {}

  /**
   * Subscribes after `afterId` (exclusive), or to the whole retained window when null. `paced`
   * resolves when the subscriber is ready for the next catch-up page. When the
   * cursor is older than the window, a `yuxi.session.resync` frame comes first and delivery
   * continues from the newest entry. The caller has checked that the session exists and is the
   * subscriber's.
   */
  async subscribe(sessionId: string, after: StreamPosition | null, sink: Sink, paced: () => Promise<void> = async () => undefined): Promise<SubscribeResult> {
    const key = this.keys.stream(sessionId);
    let start = after?.streamId ?? '0-0';
    // Without a cursor the subscriber expects the session's first event: a window that no longer
    // starts there (trimmed, or lost with Redis data) begins with a resync.
    let startSeq = after === null ? 0 : after.seq;
    // A cursor inside an entry (an event before its entry's last): the rest of that entry is read again.
    let startPart = after?.part ?? null;
    if (after === null) {
      // An existing session always has events (agent.session.created at least). No stream means
      // they are not published yet (the writer publishes after its commit, and its answer may
      // come first), or they expired or were lost. Publishing what the stream lacks tells them
      // apart: the first are then there; if nothing is, events are missing, and nothing later would
      // reveal it (no first entry to compare sequence numbers with), so the subscriber is told now.
      if ((await this.redis.exists(key)) === 0) {
        await this.outbox.flush(sessionId);
        if ((await this.redis.exists(key)) === 0) {
          startSeq = null;
          sink(resyncFrame(sessionId, start, null, 'events_lost').frame);
        }
      }
    } else {
      const info = await this.streamInfo(key);
      if (!info || hasGap(after.streamId, info)) {
        start = info?.lastId ?? '0-0';
        startSeq = null;
        startPart = null;
        sink(resyncFrame(sessionId, start, null, 'cursor_expired').frame);
      }
    }

    const subscription = new Subscription(sessionId, start, startSeq, sink, startPart);
    let state = this.streams.get(sessionId);
    if (!state) {
      const group = this.keys.group(sessionId);
      state = { position: start, seq: startSeq, subscribers: new Set(), group };
      this.streams.set(sessionId, state);
      const reader = this.readerOf(group);
      reader.sessions.add(sessionId);
      this.kickReader(reader);
    }
    state.subscribers.add(subscription);

    try {
      let cursor = startPart === null ? `(${start}` : start;
      for (;;) {
        const page = await this.redis.xrange(key, cursor, '+', 'COUNT', CATCH_UP_PAGE);
        subscription.offerAll(
          page.flatMap(([id, fields]) => toFrames(sessionId, id, fields)),
          true,
        );
        if (page.length < CATCH_UP_PAGE) break;
        // Catching up is pulled, not pushed: the next page is read once the subscriber has taken
        // this one (`paced`), so a long replay to a slow client waits for it instead of piling up.
        await paced();
        const last = page[page.length - 1]?.[0];
        if (last !== undefined) cursor = `(${last}`;
      }
    } catch (error) {
      this.unsubscribe(sessionId, subscription);
      throw error;
    }
    subscription.goLive();
    return { close: () => this.unsubscribe(sessionId, subscription) };
  }

  /** Whether Redis answers now: an SSE request is refused before its stream starts when it does not. */
  async ping(): Promise<void> {
    await this.redis.ping();
  }

  subscriberCount(): number {
    let count = 0;
    for (const state of this.streams.values()) count += state.subscribers.size;
    return count;
  }

  private unsubscribe(sessionId: string, subscription: Subscription): void {
    const state = this.streams.get(sessionId);
    if (!state) return;
    state.subscribers.delete(subscription);
    if (state.subscribers.size === 0) {
      this.streams.delete(sessionId);
      this.readers.get(state.group)?.sessions.delete(sessionId);
    }
  }

  /** Readers live as long as the process: their number is bounded by the groups, not the subscribers. */
  private readerOf(group: number): Reader {
    let reader = this.readers.get(group);
    if (!reader) {
      reader = new Reader(this.connections.of(group), this.keys.wake(group, this.hubId));
      this.readers.set(group, reader);
    }
    return reader;
  }

  private async streamInfo(key: string): Promise<StreamInfo | null> {
    try {
      const raw = (await this.redis.call('XINFO', 'STREAM', key)) as unknown[];
      const info = new Map<string, unknown>();
      for (let i = 0; i + 1 < raw.length; i += 2) info.set(String(raw[i]), raw[i + 1]);
      const first = info.get('first-entry');
      return {
        lastId: String(info.get('last-generated-id')),
        firstId: Array.isArray(first) ? String(first[0]) : null,
        maxDeletedId: String(info.get('max-deleted-entry-id') ?? '0-0'),
      };
    } catch (error) {
      if (String(error).includes('no such key')) return null;
      throw error;
    }
  }

  private kickReader(reader: Reader): void {
    if (!reader.loop) {
      reader.loop = this.readLoop(reader);
      return;
    }
    if (reader.wake) {
      reader.wake();
      return;
    }
    this.redis
      .xadd(reader.wakeKey, 'MAXLEN', '1', '*', 'w', '1')
      .then(() => this.redis.expire(reader.wakeKey, 3600))
      .catch((error: unknown) => this.logger.warn(`could not wake the event reader: ${String(error)}`));
  }

  private async readLoop(reader: Reader): Promise<void> {
    while (this.running) {
      if (reader.sessions.size === 0) {
        await new Promise<void>((resolve) => (reader.wake = resolve));
        reader.wake = null;
        continue;
      }
      const sessionOf = new Map<string, string>();
      for (const sessionId of reader.sessions) sessionOf.set(this.keys.stream(sessionId), sessionId);
      const keys = [...sessionOf.keys(), reader.wakeKey];
      const positions = [...[...sessionOf.values()].map((id) => this.streams.get(id)?.position ?? '$'), reader.wakePosition];
      let result: [string, [string, string[]][]][] | null;
      try {
        result = (await reader.connection.xread('COUNT', 1000, 'BLOCK', BLOCK_MS, 'STREAMS', ...keys, ...positions)) as [string, [string, string[]][]][] | null;
      } catch (error) {
        if (!this.running) return;
        this.readFailures.error(`event reader failed, retrying: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      for (const [key, entries] of result ?? []) {
        if (key === reader.wakeKey) {
          reader.wakePosition = entries.at(-1)?.[0] ?? reader.wakePosition;
          continue;
        }
        const sessionId = sessionOf.get(key);
        const state = sessionId === undefined ? undefined : this.streams.get(sessionId);
        if (!state || sessionId === undefined) continue;
        this.deliver(sessionId, state, entries);
      }
    }
  }

  /**
   * Fans one read batch of a session out to its subscribers. Each entry is framed and encoded once;
   * a reference subscriber standing at the batch's start position decides what to deliver, and
   * its output is joined into one Buffer, so every subscriber in step with it (all of them, in a
   * steady stream) costs one comparison and one write per batch, whatever the batch's size: no
   * per-subscriber parsing, filtering or copying. A subscriber elsewhere (still catching up, ahead
   * after its catch-up, at another seq) takes the per-frame path, as does the whole batch when it
   * needs a resync (each subscriber gets its own resync event).
   */
  private deliver(sessionId: string, state: StreamState, entries: [string, string[]][]): void {
    const fromId = state.position;
    const fromSeq = state.seq;
    const frames = entries.flatMap(([id, fields]) => toFrames(sessionId, id, fields));
    const out: Buffer[] = [];
    let resync = false;
    const reference = new Subscription(sessionId, fromId, fromSeq, (bytes) => out.push(bytes));
    reference.live = true;
    for (const frame of frames) {
      const before = out.length;
      reference.offer(frame);
      // offer() emits a resync before the frame itself: two outputs for one frame.
      if (out.length > before + 1) resync = true;
    }
    state.position = entries.at(-1)?.[0] ?? fromId;
    state.seq = reference.lastSeq;
    const joined = out.length === 0 ? null : out.length === 1 ? out[0]! : Buffer.concat(out);
    for (const subscription of state.subscribers) {
      if (!resync && subscription.live && subscription.lastId === fromId && subscription.lastPart === null && subscription.lastSeq === fromSeq) {
        // Every entry of the batch was read whole: an entry without events (a raised fence) moves it on too.
        subscription.take(joined, state.position, reference.lastSeq);
      } else {
        subscription.offerAll(frames);
      }
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    const readers = [...this.readers.values()];
    for (const reader of readers) reader.wake?.();
    this.connections.close();
    await Promise.all(readers.map((reader) => this.redis.del(reader.wakeKey).catch(() => undefined)));
    await Promise.all(readers.map((reader) => reader.loop?.catch(() => undefined)));
  }
}

export interface StreamInfo {
  lastId: string;
  firstId: string | null;
  maxDeletedId: string;
}

/**
 * Whether entries after the cursor may have been lost. Trimming (MAXLEN, or the key expiring and
 * coming back) removes entries before the first retained one, so a cursor before it cannot be
 * proven gap-free; XDEL is covered by max-deleted-entry-id; a cursor past the end is not ours.
 */
export function hasGap(afterId: string, info: StreamInfo): boolean {
  if (compareStreamIds(afterId, info.lastId) > 0) return true;
  if (compareStreamIds(afterId, info.maxDeletedId) < 0) return true;
  if (info.firstId === null) return compareStreamIds(afterId, info.lastId) < 0;
  return compareStreamIds(afterId, info.firstId) < 0;
}
