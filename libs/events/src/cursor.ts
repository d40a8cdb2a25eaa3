/**
 * SSE cursors (v2) are opaque to clients: base64url of `v2:<session id>:<stream entry id>:<seq>`,
 * where seq is the last durable event sequence number delivered at that point (empty when unknown:
 * the position a resync sets). An entry holds the events of one publish (stream-frames.ts): the
 * cursor of an event before its entry's last one adds `:<part>`, its place in the entry, so that a
 * resume there gets the entry's later events; without it the whole entry was delivered. Binding the session id lets the server reject a cursor from another
 * session instead of silently resuming at the wrong place; the seq lets it tell whether durable
 * events were missed. There is one format: a cursor of the earlier three-part form (no seq field)
 * is refused (isRetiredCursor), never resumed without that check.
 */
const STREAM_ID = /^\d{1,20}-\d{1,20}$/;
const SEQ = /^\d{1,18}$/;

const PART = /^\d{1,6}$/;

export interface StreamPosition {
  streamId: string;
  /** The last durable sequence number seen; null when unknown. */
  seq: number | null;
  /** The last event delivered of entry `streamId`, when not all of it was. */
  part?: number;
}

export function encodeCursor(sessionId: string, streamId: string, seq: number | null, part: number | null = null): string {
  return Buffer.from(`v2:${sessionId}:${streamId}:${seq === null ? '' : seq}${part === null ? '' : `:${part}`}`).toString('base64url');
}

/** The position the cursor points at, or null when it is malformed or belongs elsewhere. */
export function decodeCursor(sessionId: string, cursor: string): StreamPosition | null {
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  if ((parts.length !== 4 && parts.length !== 5) || parts[0] !== 'v2' || parts[1] !== sessionId) return null;
  const streamId = parts[2] ?? '';
  if (!STREAM_ID.test(streamId)) return null;
  const seq = parts[3] ?? '';
  if (seq !== '' && !SEQ.test(seq)) return null;
  const position: StreamPosition = { streamId, seq: seq === '' ? null : Number(seq) };
  if (parts.length === 4) return position;
  const part = parts[4] ?? '';
  return PART.test(part) ? { ...position, part: Number(part) } : null;
}

/**
 * Whether the cursor is one of this session's in the earlier format, issued before events carried
 * a sequence number (`v2:<session id>:<stream entry id>`, three parts): it cannot tell whether
 * durable events were missed, so it is refused with how to resume instead (see the stream route).
 */
export function isRetiredCursor(sessionId: string, cursor: string): boolean {
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return false;
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  return parts.length === 3 && parts[0] === 'v2' && parts[1] === sessionId && STREAM_ID.test(parts[2] ?? '');
}

/**
 * Orders Redis stream ids (`ms-seq`) numerically. Both parts are decimal integers without leading
 * zeros (Redis writes them so; cursors are validated to be digits), so a longer part is the larger
 * one and parts of equal length order as strings: no BigInt or array per comparison, which ran
 * once per subscriber per event on the fan-out path.
 */
export function compareStreamIds(a: string, b: string): number {
  const ad = a.indexOf('-');
  const bd = b.indexOf('-');
  const byMs = compareDigits(ad === -1 ? a : a.slice(0, ad), bd === -1 ? b : b.slice(0, bd));
  if (byMs !== 0) return byMs;
  return compareDigits(ad === -1 ? '0' : a.slice(ad + 1), bd === -1 ? '0' : b.slice(bd + 1));
}

function compareDigits(a: string, b: string): number {
  // A cursor may carry leading zeros ("0001-0"): strip them so that length means magnitude.
  const x = a.length > 1 && a.startsWith('0') ? a.replace(/^0+(?=\d)/, '') : a;
  const y = b.length > 1 && b.startsWith('0') ? b.replace(/^0+(?=\d)/, '') : b;
  if (x.length !== y.length) return x.length < y.length ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Whether a durable event numbered `seq` may be delivered to a subscriber that last saw
 * `lastSeq`: 'deliver' when it is the next one, 'skip' when already seen, 'gap' when durable
 * events in between are missing (the subscriber must resync). Unknown positions deliver.
 */
export function sequenceStep(lastSeq: number | null, seq: number | null): 'deliver' | 'skip' | 'gap' {
  if (seq === null || lastSeq === null) return 'deliver';
  if (seq <= lastSeq) return 'skip';
  return seq === lastSeq + 1 ? 'deliver' : 'gap';
}
