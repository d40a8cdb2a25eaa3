import { CLUSTER_SLOTS, crc16, keySlot } from '#libs/config';

/**
 * The Redis keys of a session's events. Every key of one session shares a hash tag, so the
 * publishing scripts (the stream, and the fence key of the earlier format) stay in one cluster slot.
 *
 * On one server (`shards` null) the tag is the session id, as it always was: existing streams,
 * and the replay windows clients resume from, keep their names.
 *
 * On a cluster the tag is one of `shards` shard tags, the session's by a hash of its id. The api's
 * hub reads many sessions' streams with one blocking XREAD, which Redis Cluster allows only within
 * one slot: with the shard as the tag, one reader per shard serves every subscriber of the
 * process, so its Redis connections are bounded by the shard count, never by its subscribers.
 * Each shard's tag is chosen to hash into its own equal share of the slot range, so the shards
 * spread over the nodes of a cluster whose slots are spread evenly (what `redis-cli --cluster
 * create` does).
 */
export class StreamKeys {
  private readonly tags: string[];

  constructor(readonly shards: number | null) {
    this.tags = shards === null ? [] : Array.from({ length: shards }, (_, shard) => shardTag(shard, shards));
  }

  /** The reader group of a session: its shard on a cluster, the one group 0 on one server. */
  group(sessionId: string): number {
    return this.shards === null ? 0 : shardOf(sessionId, this.shards);
  }

  /** How many reader groups there can be: 1 on one server, one per shard on a cluster. */
  get groups(): number {
    return this.shards ?? 1;
  }

  stream(sessionId: string): string {
    return this.key('yuxi:session-events', sessionId);
  }

  /**
   * Where the highest run epoch announced was kept before the stream's entries carried it (their
   * `f`): read only while a stream's newest entry is of the earlier format, never written.
   */
  fence(sessionId: string): string {
    return this.key('yuxi:event-fence', sessionId);
  }

  /**
   * A hub's private stream in a reader group: appending to it wakes that group's blocked XREAD so
   * that a newly watched session joins the read. It shares the group's slot, as XREAD requires.
   */
  wake(group: number, hubId: string): string {
    const tag = this.tags[group];
    return tag === undefined ? `yuxi:hub-wake:{${hubId}}` : `yuxi:hub-wake:{${tag}}:${hubId}`;
  }

  private key(prefix: string, sessionId: string): string {
    if (this.shards === null) return `${prefix}:{${sessionId}}`;
    return `${prefix}:{${this.tags[shardOf(sessionId, this.shards)]}}:${sessionId}`;
  }
}

/** A session's shard: CRC16 of its id (uniform over UUIDs), modulo the shard count. */
export function shardOf(sessionId: string, shards: number): number {
  return crc16(Buffer.from(sessionId, 'utf8')) % shards;
}

/**
 * The hash tag of a shard: the first `es<shard>.<n>` whose slot falls in the shard's share of the
 * slot range, [shard, shard + 1) × 16384 / shards. A share holds at least 64 slots (at most 256
 * shards), so a few hundred candidates find one; the search is bounded all the same.
 */
export function shardTag(shard: number, shards: number): string {
  const from = Math.floor((shard * CLUSTER_SLOTS) / shards);
  const to = Math.floor(((shard + 1) * CLUSTER_SLOTS) / shards);
  for (let n = 0; n < 1_000_000; n++) {
    const tag = `es${shard}.${n}`;
    const slot = keySlot(tag);
    if (slot >= from && slot < to) return tag;
  }
  throw new Error(`no hash tag found for event-stream shard ${shard} of ${shards}`);
}
