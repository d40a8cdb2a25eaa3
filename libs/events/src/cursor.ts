/**
 * SSE cursors (v2) are opaque to clients: base64url of `v2:<session id>:<stream entry id>`.
 * Binding the session id lets the server reject a cursor from another session instead of
 * silently resuming at the wrong place.
 */
const STREAM_ID = /^\d{1,20}-\d{1,20}$/;

export function encodeCursor(sessionId: string, streamId: string): string {
  return Buffer.from(`v2:${sessionId}:${streamId}`).toString('base64url');
}

/** The stream entry id the cursor points at, or null when it is malformed or belongs elsewhere. */
export function decodeCursor(sessionId: string, cursor: string): string | null {
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  if (parts.length !== 3 || parts[0] !== 'v2' || parts[1] !== sessionId) return null;
  const streamId = parts[2] ?? '';
  return STREAM_ID.test(streamId) ? streamId : null;
}

/** Orders Redis stream ids (`ms-seq`) numerically. */
export function compareStreamIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  if (am !== bm) return am < bm ? -1 : 1;
  if (as !== bs) return as < bs ? -1 : 1;
  return 0;
}
