// The SQL of the account cap (the product user's running turns across the fleet), shared by the
// session statements that take, count and free its slots.

/** Seed of the account's advisory lock key (other advisory locks use other seeds: the tree's is 19). */
export const ACCOUNT_LOCK_SEED = 35;

/** The account (product user) a session owner belongs to: an app end user's is its parent, the product user behind the app. */
export const ACCOUNT_OF = (owner: string): string => `SELECT CASE WHEN kind = 'end_user' THEN parent_id ELSE id END AS account_id FROM users WHERE id = ${owner}`;

/**
 * The account's running turns, as its cap counts them (through turns_running_by_account_idx, which
 * holds running turns only: a few index entries, whatever the account's number of sessions):
 * queued or in progress, leaving out coordinators waiting for their members (they hold no worker;
 * their members need the room). Turns waiting for a person (`requires_action`) hold no worker
 * either and are not counted.
 */
export const ACCOUNT_RUNNING_TURNS = (account: string): string =>
  `SELECT count(*) FROM turns t
   WHERE t.account_id = ${account} AND t.status IN ('queued', 'in_progress') AND coalesce(t.waitpoint->>'kind', '') <> 'cooperation'`;
