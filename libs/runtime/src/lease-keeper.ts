import { performance } from 'node:perf_hooks';
import type { Lease } from '#libs/engine';
import { LeaseLostError, TurnCancelledError } from './run-errors.js';

export interface RenewResult {
  held: boolean;
  cancelRequested: boolean;
}

export interface LeaseKeeperOptions {
  leaseMs: number;
  heartbeatMs: number;
  /** Renews the lease on the database clock (and checkpoints what the run has shown). */
  renew: (lease: Lease) => Promise<RenewResult>;
  /** Called after each successful renewal, for the executor's own durable checks (pending steers). */
  onRenewed?: () => void;
  abort: AbortController;
}

/**
 * Keeps one run's lease: renews it on a heartbeat and keeps a conservative local deadline, measured
 * on the monotonic clock from the moment the claim or renewal was *sent* (the database granted at
 * least that much later). Past the deadline the run may neither write nor publish, even if no
 * heartbeat ran in between (a process resumed after SIGSTOP checks the deadline first).
 */
export class LeaseKeeper {
  private deadline: number;
  private timer: NodeJS.Timeout | null = null;
  /** While a yield switches runs, the old lease must not be renewed (or given up). */
  private paused = false;

  constructor(
    public lease: Lease,
    sentAt: number,
    private readonly options: LeaseKeeperOptions,
  ) {
    this.deadline = sentAt + options.leaseMs;
  }

  static now(): number {
    return performance.now();
  }

  start(): void {
    this.timer = setInterval(() => void this.beat(), this.options.heartbeatMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Whether the lease may still be relied on locally. */
  held(): boolean {
    return LeaseKeeper.now() < this.deadline;
  }

  /** Throws when the local deadline passed: called before every publish and write. */
  assertHeld(): void {
    if (!this.held()) throw new LeaseLostError(`lease of run ${this.lease.runId} ran out`);
  }

  pause(): void {
    this.paused = true;
  }

  /** A new run of the same turn holds the lease now (after a yield). */
  switchTo(lease: Lease, sentAt: number): void {
    this.lease = lease;
    this.deadline = sentAt + this.options.leaseMs;
    this.paused = false;
  }

  private async beat(): Promise<void> {
    if (this.paused) return;
    const lease = this.lease;
    const sentAt = LeaseKeeper.now();
    try {
      const result = await this.options.renew(lease);
      if (this.paused || lease !== this.lease) return;
      if (!result.held) {
        this.deadline = 0;
        this.options.abort.abort(new LeaseLostError(`lease of run ${lease.runId} is held elsewhere`));
        return;
      }
      this.deadline = sentAt + this.options.leaseMs;
      if (result.cancelRequested) this.options.abort.abort(new TurnCancelledError());
      else this.options.onRenewed?.();
    } catch {
      // The database is unreachable: the lease keeps its old deadline; past it the run stops.
      if (!this.held()) this.options.abort.abort(new LeaseLostError(`lease of run ${lease.runId} could not be renewed`));
    }
  }
}
