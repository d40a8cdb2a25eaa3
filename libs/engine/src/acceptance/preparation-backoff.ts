/** The longest wait between two tries of one preparation (unless the grace period itself is longer). */
export const PREPARATION_RETRY_MAX_MS = 5 * 60_000;

/**
 * How long the recovery sweep waits after starting a preparation's try number `attempts + 1`
 * before it may start the next one: the grace period (RECOVERY_GRACE_MS), doubled with each try,
 * at most PREPARATION_RETRY_MAX_MS. The wait runs from the start of the try, so a try that hangs
 * (a stalled store) is not started again before it.
 */
export function preparationRetryDelayMs(attempts: number, graceMs: number): number {
  const cap = Math.max(graceMs, PREPARATION_RETRY_MAX_MS);
  // 2^30 × any grace is past the cap: no overflow to Infinity for inputs tried for months.
  return Math.min(cap, graceMs * 2 ** Math.min(Math.max(attempts, 0), 30));
}
