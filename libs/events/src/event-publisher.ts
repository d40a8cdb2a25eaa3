import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AppConfig, getEach, type RedisClient } from '#libs/config';
import { newId } from '#libs/database';
import { EVENT_FORMAT, type EventType, type PublicEvent } from './event.types.js';
import { boundItemContent } from './item-content-bound.js';
import type { OutgoingEvent } from './outgoing-events.js';
import { EVENTS_REDIS } from './redis.providers.js';
import { StreamKeys } from './stream-keys.js';

/**
 * Appends durable (outbox) events to the session stream in sequence order. Only the next sequence
 * number is appended: duplicates (a row two flushers raced on) are skipped and a row that would
 * leave a hole stops the batch, so the stream is always a contiguous prefix of the outbox. Only a
 * caller that knows every row up to `floor` (ARGV[3]) was confirmed in the stream (the relay,
 * starting at the oldest unpublished row) may (re)start a stream whose sequence key is missing or
 * behind (a new session, or Redis lost or rolled back its data): subscribers see the jump in
 * `yuxi.seq` and resync. Without a floor (-1) a missing key answers -1 and nothing is appended.
 * Run events raise the session's fence to their epoch; the fence key is written only when raised.
 * Every claim raises it, so it can expire before the stream only during one run longer than the
 * replay TTL (days), far beyond the lease that decides whether an older run may still stream.
 * Returns the last sequence number in the stream.
 */
const DURABLE_SCRIPT = `
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
local fence = tonumber(redis.call('GET', KEYS[3]) or '0')
local raised = false
local floor = tonumber(ARGV[3])
if floor >= 0 and last < floor then last = floor end
if last < 0 then return -1 end
for i = 4, #ARGV, 4 do
  local seq = tonumber(ARGV[i])
  if seq == last + 1 then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 't', ARGV[i + 2], 'e', ARGV[i + 3], 's', ARGV[i])
    last = seq
    if ARGV[i + 1] ~= '' and tonumber(ARGV[i + 1]) > fence then
      fence = tonumber(ARGV[i + 1])
      raised = true
    end
  elseif seq > last + 1 then
    break
  end
end
redis.call('SET', KEYS[2], last, 'EX', ARGV[2])
if raised then redis.call('SET', KEYS[3], fence, 'EX', ARGV[2]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return last
`;

/**
 * Appends live-only events (text deltas) of the run holding fencing epoch ARGV[3], provided no
 * newer run raised the fence (-1) and the durable events they follow (up to ARGV[4]) are in the
 * stream (-2: they would arrive before the item they extend). Each entry records the last durable
 * sequence number before it (`s`), so a cursor taken at a live entry still knows its place.
 */
const LIVE_SCRIPT = `
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
local fence = tonumber(redis.call('GET', KEYS[3]) or '0')
if tonumber(ARGV[3]) < fence then return -1 end
if last < tonumber(ARGV[4]) then return -2 end
for i = 5, #ARGV, 2 do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 't', ARGV[i], 'e', ARGV[i + 1], 's', last, 'l', '1')
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** Raises the session's fence to ARGV[1] (never lowers it), with the stream's expiry ARGV[2]. */
const FENCE_SCRIPT = `
local fence = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > fence then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end
return 1
`;

type PublishingRedis = RedisClient & {
  yuxiPublishDurable(stream: string, seqKey: string, fenceKey: string, ...args: string[]): Promise<number>;
  yuxiPublishLive(stream: string, seqKey: string, fenceKey: string, ...args: string[]): Promise<number>;
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
    this.redis.defineCommand('yuxiPublishDurable', { numberOfKeys: 3, lua: DURABLE_SCRIPT });
    this.redis.defineCommand('yuxiPublishLive', { numberOfKeys: 3, lua: LIVE_SCRIPT });
  }

  /** Appends outbox rows in order; returns the last durable sequence number now in the stream. */
  async publishDurable(sessionId: string, rows: DurableRow[], floor = -1): Promise<number> {
    const args = [...this.windowArgs(), String(floor)];
    for (const row of rows) args.push(String(row.seq), row.epoch === null ? '' : String(row.epoch), row.type, row.payload);
    return Number(await (this.redis as PublishingRedis).yuxiPublishDurable(...this.keys(sessionId), ...args));
  }

  /** The last durable sequence number in each session's stream; null where the stream has none (new, expired or lost). */
  async lastSeqs(sessionIds: string[]): Promise<(number | null)[]> {
    // One GET per key (not MGET), pipelined: sessions' keys live in different cluster slots, and
    // on a cluster each slot gets its own pipeline (getEach).
    const values = await getEach(this.redis, sessionIds.map((id) => this.streamKeys.seq(id)));
    return values.map((value) => (value === null ? null : Number(value)));
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
    await this.redis.eval(FENCE_SCRIPT, 1, this.streamKeys.fence(sessionId), String(epoch), String(this.config.eventsReplayTtlSeconds));
  }

  /**
   * What each assistant item of a run shows in the session stream (its deltas, newest window
   * only): what clients saw of a run whose worker died before it could say.
   */
  async shownText(sessionId: string, runId: string, maxEntries = 5_000): Promise<Map<string, { outputIndex: number; text: string }>> {
    const entries = (await this.redis.xrevrange(this.streamKeys.stream(sessionId), '+', '-', 'COUNT', maxEntries)) as [string, string[]][];
    const shown = new Map<string, { outputIndex: number; text: string }>();
    for (const [, fields] of entries.reverse()) {
      if (fields[1] !== ('agent.session.turn.output_text.delta' satisfies EventType)) continue;
      const event = JSON.parse(fields[3] ?? '{}') as { item_id?: string; output_index?: number; delta?: string; yuxi?: { run_id?: string } };
      if (event.yuxi?.run_id !== runId || !event.item_id) continue;
      const item = shown.get(event.item_id) ?? { outputIndex: event.output_index ?? 0, text: '' };
      item.text += event.delta ?? '';
      shown.set(event.item_id, item);
    }
    return shown;
  }

  private keys(sessionId: string): [string, string, string] {
    return [this.streamKeys.stream(sessionId), this.streamKeys.seq(sessionId), this.streamKeys.fence(sessionId)];
  }

  /** Events in their public envelope, with this deployment's bound on item content (EVENT_ITEM_CONTENT_BYTES). */
  stamp(sessionId: string, events: OutgoingEvent[]): PublicEvent[] {
    return stampEvents(sessionId, events, this.config.eventItemContentBytes);
  }

  private windowArgs(): string[] {
    return [String(this.config.eventsReplayMaxLen), String(this.config.eventsReplayTtlSeconds)];
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
