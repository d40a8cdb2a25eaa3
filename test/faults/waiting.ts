// Bounded waits of the fault suite: every wait polls a condition or races a deadline.

/**
 * Polls `probe` until it returns a value other than undefined/null/false, at most `timeoutMs`.
 * Errors thrown by the probe (a dependency that is down on purpose) count as "not yet".
 */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  { timeoutMs = 20_000, intervalMs = 100 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (let attempt = 0; ; attempt++) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline || attempt > timeoutMs / Math.max(intervalMs, 1) + 10) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    }
    await delay(intervalMs);
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves with the promise's value, or rejects after `ms`. */
export async function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
