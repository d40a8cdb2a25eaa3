import { defineMachine, type StateOf } from '#libs/database';
import { RUN_MACHINE } from './turn-states.js';

/**
 * A run's lease, made explicit: derived from the run's columns (no column of its own), on the
 * database clock. The runs machine's `queued` is never written: a run that waits for a worker is
 * an `in_progress` run nobody holds (`unleased`). Takeover and seizure are edges of this machine,
 * not of the run's status (which stays `in_progress` through both).
 *
 * - `unleased`: in progress, no holder: a successor after an interrupt, or a resumed turn's run.
 * - `held`: in progress, a holder whose lease has not expired (`lease_expires_at > now()`).
 * - `expired`: in progress, a holder whose lease expired (a dead or stalled worker): no statement
 *   writes this state, time does; recovery interrupts the run.
 * - `released`: the run left `in_progress`; every path out clears the holder.
 */
export const RUN_LEASE_MACHINE = defineMachine({
  table: null,
  column: 'lease',
  states: ['unleased', 'held', 'expired', 'released'],
  initial: ['held', 'unleased'],
  terminal: ['released'],
  edges: {
    /** A claim starts a turn with its first run, leased to the claiming worker; a yield's successor stays with its owner. */
    claim: { from: [null], to: ['held'], by: 'TurnsRepository.startTurn' },
    /** An interrupt's successor, or the run that continues a resumed turn: for any worker. */
    successor: { from: [null], to: ['unleased'], by: 'RunsRepository.interruptRun' },
    /** A worker takes over a run nobody holds. */
    takeOver: { from: ['unleased'], to: ['held'], by: 'RunsRepository.takeOver' },
    /** Heartbeats extend the holder's lease. */
    renew: { from: ['held'], to: ['held'] },
    /** Time passes without a heartbeat (no statement). */
    lapse: { from: ['held'], to: ['expired'] },
    /** The operator's stop: the lease goes to a new holder under a new fencing epoch, whoever held it. */
    seize: { from: ['unleased', 'held', 'expired'], to: ['held'], by: 'RunsRepository.seizeRun' },
    /** The holder yields, suspends, settles or releases the run. */
    end: { from: ['held'], to: ['released'] },
    /** Recovery interrupts or settles a run whose holder is gone. */
    recover: { from: ['unleased', 'expired'], to: ['released'] },
  },
});
export type RunLeaseState = StateOf<typeof RUN_LEASE_MACHINE>;

/** The run statuses a lease can be held in: every other status is `released`. */
const LEASABLE = RUN_MACHINE.list('in_progress');

/** Each lease state as a SQL predicate over a runs row (alias `r` by default). */
export function leaseStateSql(alias = 'r'): Record<RunLeaseState, string> {
  const executing = `${alias}.status IN (${LEASABLE})`;
  return {
    unleased: `(${executing} AND ${alias}.lease_owner IS NULL)`,
    held: `(${executing} AND ${alias}.lease_owner IS NOT NULL AND ${alias}.lease_expires_at > now())`,
    expired: `(${executing} AND ${alias}.lease_owner IS NOT NULL AND ${alias}.lease_expires_at <= now())`,
    released: `(${alias}.status NOT IN (${LEASABLE}))`,
  };
}

/** The lease state of a run read at `now` (the database clock's reading, where the caller has one). */
export function leaseStateOf(run: { status: string; leaseOwner: string | null; leaseExpiresAt: Date | null }, now: Date): RunLeaseState {
  if (run.status !== 'in_progress') return 'released';
  if (run.leaseOwner === null) return 'unleased';
  return run.leaseExpiresAt !== null && run.leaseExpiresAt > now ? 'held' : 'expired';
}
