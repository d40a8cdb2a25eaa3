/** Postgres SQLSTATEs of a connection that failed or a server that is going away or not up yet. */
const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '53300']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTCONN']);
/** The code of libs/files' StorageUnavailableError: the file store (a directory, a bucket) failed. */
export const STORAGE_UNAVAILABLE = 'ESTORAGEUNAVAILABLE';
/** What pg, the pool and ioredis say when a connection is gone or a command timed out. */
const MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Command timed out',
  'Connection is closed',
  "Stream isn't writeable",
  'the database system is',
  'Query read timeout',
];

/**
 * Whether an error means a backing service (Postgres, Redis, file storage) is unreachable for now, as opposed to
 * a bug or a constraint violation: the api answers 503 `retryable`, the worker retries within its lease.
 */
export function isDependencyUnavailable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (PG_UNAVAILABLE.has(code) || SOCKET_CODES.has(code) || code === STORAGE_UNAVAILABLE)) return true;
  return typeof message === 'string' && MESSAGES.some((m) => message.includes(m));
}

/**
 * Postgres SQLSTATEs of a statement that lost a race with a concurrent one or ran out of time:
 * deadlock, serialization failure, lock not available, statement timeout. Nothing was written; the
 * same request (same Idempotency-Key) can simply be retried, so the api answers 503 `retryable`.
 */
const PG_TRANSIENT = new Set(['40P01', '40001', '55P03', '57014']);

export function isTransientDatabaseError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && PG_TRANSIENT.has(code);
}

/** A unique constraint refused a write the code did not expect to collide: a state conflict, not a server error. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}
