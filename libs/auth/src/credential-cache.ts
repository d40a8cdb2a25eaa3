/** What a cached credential must say about itself for invalidations and expiry to find it. */
export interface CachedCredential {
  keyId: string;
  userId: string;
  expiresAt: Date | null;
}

export interface CredentialCacheOptions {
  /** The bounded staleness: an entry older than this is read again from Postgres. 0 caches nothing. */
  ttlMs: number;
  /** At most this many entries; a full cache starts over (verifications are cheap to redo). */
  max: number;
  now?: () => number;
}

/** What an invalidation names: one key (revoked, changed) or every key of one user (role changed). */
export type InvalidationTarget = { keyId: string } | { userId: string };

/**
 * Verified credentials of this process, trusted only while the invalidation channel is live.
 *
 * The rules (pure; the pub/sub wiring is in `AuthInvalidations`):
 * - Nothing is served or stored while the channel is down (`disconnected()`): a replica that
 *   cannot hear invalidations reads Postgres on every request instead of trusting what it holds.
 *   Coming back (`connected()`) starts from an empty cache, since messages sent in between are lost.
 * - An invalidation drops the matching entries before it is acknowledged to the revoking replica.
 * - A verification that read Postgres before an invalidation (or a reconnect) must not store what
 *   it read after it: `begin()` hands out the current generation, every invalidation and every
 *   change of the channel's state moves it, and `set()` stores only under an unchanged generation.
 * - An entry lives at most `ttlMs` (the staleness bound should a message be lost on a connection
 *   that looks alive), and never past its key's own expiry.
 */
export class CredentialCache<V extends CachedCredential> {
  private readonly entries = new Map<string, { value: V; storedAt: number }>();
  private live = false;
  private generation = 0;
  private readonly now: () => number;

  constructor(private readonly options: CredentialCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  get isLive(): boolean {
    return this.live;
  }

  get size(): number {
    return this.entries.size;
  }

  get(hash: string): V | null {
    if (!this.live) return null;
    const entry = this.entries.get(hash);
    if (!entry) return null;
    const now = this.now();
    if (now - entry.storedAt >= this.options.ttlMs || (entry.value.expiresAt !== null && entry.value.expiresAt.getTime() <= now)) {
      this.entries.delete(hash);
      return null;
    }
    return entry.value;
  }

  /** Call before reading a credential from Postgres; pass the result to `set`. */
  begin(): number {
    return this.generation;
  }

  /** Stores what a verification read, unless anything was invalidated (or the channel moved) since its `begin()`. */
  set(hash: string, value: V, generation: number): boolean {
    if (!this.live || generation !== this.generation || this.options.ttlMs <= 0) return false;
    if (this.entries.size >= this.options.max) this.entries.clear();
    this.entries.set(hash, { value, storedAt: this.now() });
    return true;
  }

  invalidate(target: InvalidationTarget): void {
    this.generation += 1;
    for (const [hash, entry] of this.entries) {
      if ('keyId' in target ? entry.value.keyId === target.keyId : entry.value.userId === target.userId) this.entries.delete(hash);
    }
  }

  /** The channel is subscribed (again): start trusting, from nothing. */
  connected(): void {
    this.generation += 1;
    this.entries.clear();
    this.live = true;
  }

  /** The channel is down: invalidations may be missed from now on, so nothing cached is trusted. */
  disconnected(): void {
    this.generation += 1;
    this.entries.clear();
    this.live = false;
  }
}
