/** Rows one step of the recovery sweep reads at most (the next sweep takes the rest). */
export const SWEEP_BATCH = 500;
