import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AppConfig, groupBySlot, isCluster, type RedisClient } from '#libs/config';
import { newId } from '#libs/database';
import { EVENT_FORMAT, type EventType, type PublicEvent } from './event.types.js';
import { boundItemContent } from './item-content-bound.js';
import type { OutgoingEvent } from './outgoing-events.js';
import { EVENTS_REDIS } from './redis.providers.js';
import { StreamKeys } from './stream-keys.js';
import { entryEvents } from './stream-frames.js';

/**
 * What every publishing script starts with: the stream's state, read from its newest entry (its
 * `q`, `f` and `x` fields, see stream-frames.ts), so one read serves where a sequence key and a
 * fence key took two, and nothing but the stream itself needs writing or expiring. An entry of the
 * earlier format (no state fields) still tells the sequence number (its `s`); the fence was then a
 * key of its own (KEYS[2]), read until the stream's next publish carries it.
 *
 * The stream's expiry is renewed only when it is due: an entry records when the stream expires
 * (`x`), and a publish renews it (EXPIRE) only when that is sooner than the replay TTL from now, or
 * later than the TTL and its slack (a publisher with a shorter TTL). So a stream lives from its last
 * publish at least the replay TTL, at most a tenth longer, and most publishes do not expire it.
 * ARGV[1] is the MAXLEN, ARGV[2] the TTL in seconds, ARGV[3] the publisher's clock in seconds.
 */
const STATE = `
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
local last, fence, expires = -1, 0, 0
if top then
  local state, earlier = nil, nil
  local f = top[2]
  for i = 1, #f, 2 do
    local name = f[i]
    if name == 'q' then state = tonumber(f[i + 1])
    elseif name == 'f' then fence = tonumber(f[i + 1])
    elseif name == 'x' then expires = tonumber(f[i + 1])
    elseif name == 's' then earlier = tonumber(f[i + 1]) end
  end
  if state then last = state
  elseif earlier then
    last = earlier
    fence = tonumber(redis.call('GET', KEYS[2]) or '0')
  end
end
local ttl = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local slack = math.max(1, math.floor(ttl / 10))
local due = expires < now + ttl or expires > now + ttl + slack
if due then expires = now + ttl + slack end
local fields = {}
local function append(head)
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'q', last, 'f', fence, 'x', expires, unpack(head))
end
`;

/** Events one entry holds at most: a relay page of hundreds of rows spreads over a few entries. */
const ENTRY_EVENTS = 100;

/**
 * Appends durable (outbox) events to the session stream in sequence order, one entry per publish
 * (ENTRY_EVENTS at most each). Only the next sequence number is appended: duplicates (a row two
 * flushers raced on) are skipped and a row that would leave a hole stops the batch, so the stream
 * is always a contiguous prefix of the outbox. Only a caller that knows every row up to `floor`
 * (ARGV[4]) was confirmed in the stream (the relay, starting at the oldest unpublished row) may
 * (re)start a stream that is missing or behind (a new session, or Redis lost or rolled back its
 * data): subscribers see the jump in `yuxi.seq` and resync. Without a floor (-1) a missing stream
 * answers -1 and nothing is appended. Run events raise the session's fence to their epoch; the
 * fence lives in the stream, so it expires with it. Returns the last sequence number in the stream.
 */
const DURABLE_SCRIPT = `${STATE}
local floor = tonumber(ARGV[4])
if floor >= 0 and last < floor then last = floor end
if last < 0 then return -1 end
local appended = false
for i = 5, #ARGV, 4 do
  local seq = tonumber(ARGV[i])
  if seq == last + 1 then
    local n = #fields
    fields[n + 1] = 't'
    fields[n + 2] = ARGV[i + 2]
    fields[n + 3] = 'e'
    fields[n + 4] = ARGV[i + 3]
    fields[n + 5] = 's'
    fields[n + 6] = ARGV[i]
    last = seq
    if ARGV[i + 1] ~= '' and tonumber(ARGV[i + 1]) > fence then fence = tonumber(ARGV[i + 1]) end
    if n + 6 >= ${ENTRY_EVENTS * 6} then
      append(fields)
      fields = {}
      appended = true
    end
  elseif seq > last + 1 then
    break
  end
end
if #fields > 0 then
  append(fields)
  appended = true
end
if appended and due then redis.call('EXPIRE', KEYS[1], ttl + slack) end
return last
`;

/**
 * Appends live-only events (text deltas) of the run holding fencing epoch ARGV[4], as one entry,
 * provided no newer run raised the fence (-1) and the durable events they follow (up to ARGV[5])
 * are in the stream (-2: they would arrive before the item they extend). The entry records the
 * last durable sequence number before it (`q`), so a cursor taken at a live event knows its place.
 */
const LIVE_SCRIPT = `${STATE}
if tonumber(ARGV[4]) < fence then return -1 end
if last < tonumber(ARGV[5]) then return -2 end
local count = 0
for i = 6, #ARGV, 2 do
  if count == 0 then fields = {'l', '1'} end
  local n = #fields
  fields[n + 1] = 't'
  fields[n + 2] = ARGV[i]
  fields[n + 3] = 'e'
  fields[n + 4] = ARGV[i + 1]
  count = count + 1
  if count == ${ENTRY_EVENTS} or i + 1 >= #ARGV then
    append(fields)
    count = 0
  end
end
if due then redis.call('EXPIRE', KEYS[1], ttl + slack) end
return 1
`;

/**
 * Raises the session's fence to ARGV[4] (never lowers it) with an entry that holds no event. A
 * session without a stream is left as it is: live events are refused there until durable events
 * recreate it, and those of a newer run raise the fence themselves.
 */
const FENCE_SCRIPT = `${STATE}
if not top then return 0 end
local raised = tonumber(ARGV[4])
if raised <= fence then return 1 end
fence = raised
append({})
if due then redis.call('EXPIRE', KEYS[1], ttl + slack) end
return 1
`;

type PublishingRedis = RedisClient & {
  yuxiPublishDurable(stream: string, legacyFenceKey: string, ...args: string[]): Promise<number>;
  yuxiPublishLive(stream: string, legacyFenceKey: string, ...args: string[]): Promise<number>;
  yuxiRaiseFence(stream: string, legacyFenceKey: string, ...args: string[]): Promise<number>;
};

/** An outbox row as the stream receives it. */
export interface DurableRow {
  seq: number;
  epoch: number | null;
  type: string;
  payload: string;
}

export type LiveOutcome = 'published' | 'fenced' | 'behind';

@Injectable()
export class EventPublisher implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(EVENTS_REDIS) private readonly redis: RedisClient,
    private readonly config: AppConfig,
    private readonly streamKeys: StreamKeys,
  ) {}

  /** Registered as commands so ioredis sends EVALSHA instead of the script text on every publish. */
  onModuleInit(): void {
    this.redis.defineCommand('yuxiPublishDurable', { numberOfKeys: 2, lua: DURABLE_SCRIPT });
    this.redis.defineCommand('yuxiPublishLive', { numberOfKeys: 2, lua: LIVE_SCRIPT });
    this.redis.defineCommand('yuxiRaiseFence', { numberOfKeys: 2, lua: FENCE_SCRIPT });
  }

  /** Appends outbox rows in order; returns the last durable sequence number now in the stream. */
  async publishDurable(sessionId: string, rows: DurableRow[], floor = -1): Promise<number> {
    const args = [...this.windowArgs(), String(floor)];
    for (const row of rows) args.push(String(row.seq), row.epoch === null ? '' : String(row.epoch), row.type, row.payload);
    return Number(await (this.redis as PublishingRedis).yuxiPublishDurable(...this.keys(sessionId), ...args));
  }

  /**
   * Drops purged sessions' streams (and their fences) now instead of at their TTL: a deleted
   * session's stream would otherwise hold its events in Redis for EVENTS_REPLAY_TTL_SECONDS after
   * the purge. One DEL per session (its two keys share its slot), pipelined per slot on a cluster.
   */
  async dropStreams(sessionIds: string[]): Promise<void> {
    if (sessionIds.length === 0) return;
    const keys = sessionIds.map((id) => this.streamKeys.stream(id));
    const groups = isCluster(this.redis) ? groupBySlot(keys) : [keys.map((_, i) => i)];
    await Promise.all(
      groups.map(async (group) => {
        const pipeline = this.redis.pipeline();
        for (const i of group) pipeline.del(...this.keys(sessionIds[i]!));
        for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
      }),
    );
  }

  /** The last durable sequence number in each session's stream; null where the stream has none (new, expired or lost). */
  async lastSeqs(sessionIds: string[]): Promise<(number | null)[]> {
    // The newest entry of each stream, pipelined: sessions' keys live in different cluster slots,
    // and on a cluster each slot gets its own pipeline.
    const keys = sessionIds.map((id) => this.streamKeys.stream(id));
    const seqs: (number | null)[] = keys.map(() => null);
    const groups = isCluster(this.redis) ? groupBySlot(keys) : [keys.map((_, i) => i)];
    await Promise.all(
      groups.map(async (group) => {
        const pipeline = this.redis.pipeline();
        for (const i of group) pipeline.xrevrange(keys[i]!, '+', '-', 'COUNT', 1);
        const results = (await pipeline.exec()) ?? [];
        group.forEach((keyIndex, i) => {
          const [error, entries] = results[i] ?? [null, []];
          if (error) throw error;
          const fields = (entries as [string, string[]][] | undefined)?.[0]?.[1];
          seqs[keyIndex] = fields ? lastSeqOf(fields) : null;
        });
      }),
    );
    return seqs;
  }

  /** Appends live-only events of the run with `epoch`, which follow durable event `afterSeq`. */
  async publishLive(sessionId: string, epoch: number, afterSeq: number, events: OutgoingEvent[]): Promise<LiveOutcome> {
    if (events.length === 0) return 'published';
    const args = [...this.windowArgs(), String(epoch), String(afterSeq)];
    for (const event of this.stamp(sessionId, events)) args.push(event.type, JSON.stringify(event));
    const outcome = Number(await (this.redis as PublishingRedis).yuxiPublishLive(...this.keys(sessionId), ...args));
    return outcome === -1 ? 'fenced' : outcome === -2 ? 'behind' : 'published';
  }

  /**
   * Raises the session's fence to `epoch` without an event: from now on live events of runs leased
   * under an older epoch are refused (an operator stopping a run whose worker still streams).
   */
  async raiseFence(sessionId: string, epoch: number): Promise<void> {
    await (this.redis as PublishingRedis).yuxiRaiseFence(...this.keys(sessionId), ...this.windowArgs(), String(epoch));
  }

  /**
   * What each assistant item of a run shows in the session stream (its deltas, newest window
   * only): what clients saw of a run whose worker died before it could say.
   */
  async shownText(sessionId: string, runId: string, maxEntries = 5_000): Promise<Map<string, { outputIndex: number; text: string }>> {
    const entries = (await this.redis.xrevrange(this.streamKeys.stream(sessionId), '+', '-', 'COUNT', maxEntries)) as [string, string[]][];
    const shown = new Map<string, { outputIndex: number; text: string }>();
    for (const [, fields] of entries.reverse()) {
      for (const { type, data } of entryEvents(fields).events) {
        if (type !== ('agent.session.turn.output_text.delta' satisfies EventType)) continue;
        const event = JSON.parse(data) as { item_id?: string; output_index?: number; delta?: string; yuxi?: { run_id?: string } };
        if (event.yuxi?.run_id !== runId || !event.item_id) continue;
        const item = shown.get(event.item_id) ?? { outputIndex: event.output_index ?? 0, text: '' };
        item.text += event.delta ?? '';
        shown.set(event.item_id, item);
      }
    }
    return shown;
  }

  private keys(sessionId: string): [string, string] {
    return [this.streamKeys.stream(sessionId), this.streamKeys.fence(sessionId)];
  }

  /** Events in their public envelope, with this deployment's bound on item content (EVENT_ITEM_CONTENT_BYTES). */
  stamp(sessionId: string, events: OutgoingEvent[]): PublicEvent[] {
    return stampEvents(sessionId, events, this.config.eventItemContentBytes);
  }

  /** MAXLEN, TTL and this clock (seconds): what every script's STATE reads. */
  private windowArgs(): string[] {
    return [String(this.config.eventsReplayMaxLen), String(this.config.eventsReplayTtlSeconds), String(Math.floor(Date.now() / 1000))];
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}

/**
 * The public envelope: a stable event_id, the session, the time, and a `yuxi` object to extend;
 * an item's content past `itemContentBytes` is cut and flagged (see item-content-bound).
 */
export function stampEvents(sessionId: string, events: OutgoingEvent[], itemContentBytes: number): PublicEvent[] {
  const createdAt = Math.floor(Date.now() / 1000);
  return events.map(
    (raw) => {
      const event = boundItemContent(raw, itemContentBytes);
      return {
        ...event,
        event_id: `evt_${newId().replaceAll('-', '')}`,
        session_id: sessionId,
        created_at: createdAt,
        yuxi: { format: EVENT_FORMAT, ...('yuxi' in event ? event.yuxi : undefined) },
      } as PublicEvent;
    },
  );
}

/** The last durable sequence number an entry records: its `q`, or in the earlier format its `s`. */
function lastSeqOf(fields: string[]): number | null {
  let earlier: number | null = null;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'q') return Number(fields[i + 1]) >= 0 ? Number(fields[i + 1]) : null;
    if (fields[i] === 's') earlier = Number(fields[i + 1]);
  }
  return earlier !== null && earlier >= 0 ? earlier : null;
}
