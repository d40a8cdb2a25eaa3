import { LEASABLE_RUN_STATUSES, statusGuard } from '../machines/turn-states.js';

/**
 * The right to write one run: its id, the worker holding it, and the fencing epoch it was leased
 * under. Every write through a lease is one statement that also checks, on the database clock,
 * that the lease is still this one and unexpired: a worker that lost it can no longer write.
 */
export interface Lease {
  runId: string;
  owner: string;
  epoch: number;
}

/** A run that executes (or waits for a worker to take it over): the only kind a lease can hold. */
export const EXECUTING = statusGuard('status', LEASABLE_RUN_STATUSES);

/** The predicate every fenced write puts on `runs` (parameters: run id, owner, epoch). */
export const HELD = (run: string, owner: string, epoch: string): string =>
  `id = ${run} AND ${EXECUTING} AND lease_owner = ${owner} AND epoch = ${epoch} AND lease_expires_at > now()`;
