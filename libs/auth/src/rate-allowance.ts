/**
 * Rate limits without a Redis round trip per request: each replica leases points of a bucket's
 * window from the shared Redis counter in batches and spends them locally. The accounting is pure
 * (here, unit-tested); `RateLimits` does the leasing.
 *
 * Why the limit still holds across replicas: the Redis counter counts every leased point, and a
 * lease is granted only from what the window has left, so the requests admitted in one window, all
 * replicas together, never exceed the limit. A local allowance expires when the Redis window does
 * (its remaining time is read with the lease), so a point is spent in the window that counted it.
 * The tolerance is the other way: a replica refuses once the window's points are all leased, while
 * another replica may still hold up to one lease unspent, so a key can be refused up to
 * (replicas − 1) × lease points early in a window. A lease is `RATE_LIMIT_LEASE_PERCENT` of the
 * limit (default 1 %), and 1 point under 100 requests per minute: small limits are exact.
 */

/** Points leased at a time for a limit: `percent` of it, at least 1 (0 %: every request asks Redis). */
export function leaseSize(limit: number, percent: number): number {
  return Math.max(1, Math.floor((limit * percent) / 100));
}

/**
 * What a lease of `wanted` points was granted, given the window's counter after adding them: all
 * of them while the window has room, the rest of the window when it has less, none when it is
 * spent. (The counter may run past the limit: it only ever says "spent" then.)
 */
export function grantedPoints(limit: number, wanted: number, counterAfter: number): number {
  return Math.max(0, Math.min(wanted, limit - (counterAfter - wanted)));
}

/** Two leases that end within this of each other were granted by the same Redis window. */
const WINDOW_SLACK_MS = 1_000;

export type Decision = { allowed: true } | { allowed: false; retryAfterMs: number };

interface Allowance {
  left: number;
  /** Local clock: when the Redis window that granted these points ends. */
  until: number;
  /** The window granted nothing: every request is refused until it ends, with no lease asked. */
  spent: boolean;
}

/** The points of each bucket this replica holds. */
export class AllowanceBook {
  private readonly buckets = new Map<string, Allowance>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly max = 100_000,
  ) {}

  /** One request: allowed from the local allowance, refused in a spent window, or null when a lease must be asked for. */
  take(bucket: string): Decision | null {
    const allowance = this.buckets.get(bucket);
    if (!allowance) return null;
    const now = this.now();
    if (now >= allowance.until) {
      this.buckets.delete(bucket);
      return null;
    }
    if (allowance.left > 0) {
      allowance.left -= 1;
      return { allowed: true };
    }
    return allowance.spent ? { allowed: false, retryAfterMs: allowance.until - now } : null;
  }

  /**
   * When the Redis window this replica last leased the bucket's points from ends (local clock), if
   * it has not ended yet: a lease within it need not read the window's remaining time again.
   */
  windowEnd(bucket: string): number | null {
    const allowance = this.buckets.get(bucket);
    return allowance && this.now() < allowance.until ? allowance.until : null;
  }

  /**
   * A lease's answer, for the request that asked for it: it takes the first granted point (the
   * rest is the allowance), or is refused until the window ends when nothing was granted.
   */
  record(bucket: string, granted: number, windowLeftMs: number, sentAt: number = this.now()): Decision {
    if (this.buckets.size >= this.max && !this.buckets.has(bucket)) this.buckets.clear();
    // From when the lease was asked for, not answered: the points must not outlive their window.
    const until = sentAt + windowLeftMs;
    // Two leases of one bucket may be in flight at once (a waiter that gave up asks itself): what
    // the other left in this window is added to, not replaced, so no leased point is thrown away.
    const held = this.buckets.get(bucket);
    const carried = held && !held.spent && held.until > this.now() && Math.abs(held.until - until) < WINDOW_SLACK_MS ? held.left : 0;
    if (granted <= 0) {
      if (carried > 0) return this.take(bucket) ?? { allowed: false, retryAfterMs: windowLeftMs };
      this.buckets.set(bucket, { left: 0, until, spent: true });
      return { allowed: false, retryAfterMs: windowLeftMs };
    }
    this.buckets.set(bucket, { left: carried + granted - 1, until, spent: false });
    return { allowed: true };
  }
}
