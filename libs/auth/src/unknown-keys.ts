export interface UnknownKeysOptions {
  /** How long a secret that matched no key is remembered (no lookup for it meanwhile). 0 remembers nothing. */
  ttlMs: number;
  /** At most this many; the least recently seen goes first. */
  max: number;
  now?: () => number;
}

/**
 * The negative cache of key verification: keyed hashes of well-formed secrets that matched no live
 * key, so that a client repeating a bad key costs one Postgres lookup per TTL, not one per request.
 * Bounded (least recently used out first), so a flood of distinct random keys cannot grow it.
 *
 * Why remembering a miss is safe: a secret matches no row until a key is made with it, and keys are
 * only ever made from fresh random secrets, never from one a client has already sent. A revoked or
 * expired key stays refused. What could turn a miss into a hit is only a row inserted with that very
 * hash, and the TTL bounds even that.
 */
export class UnknownKeys {
  private readonly entries = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly options: UnknownKeysOptions) {
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Whether the hash matched no key within the TTL (and is then the most recently seen). */
  has(hash: string): boolean {
    const storedAt = this.entries.get(hash);
    if (storedAt === undefined) return false;
    this.entries.delete(hash);
    if (this.now() - storedAt >= this.options.ttlMs) return false;
    this.entries.set(hash, storedAt);
    return true;
  }

  add(hash: string): void {
    if (this.options.ttlMs <= 0 || this.options.max <= 0) return;
    this.entries.delete(hash);
    while (this.entries.size >= this.options.max) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    this.entries.set(hash, this.now());
  }
}
