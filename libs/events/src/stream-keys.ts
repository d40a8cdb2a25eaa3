/** Every key of one session shares the `{session id}` hash tag, so the scripts stay in one cluster slot. */
export function sessionStreamKey(sessionId: string): string {
  return `yuxi:session-events:{${sessionId}}`;
}

/** The last durable sequence number appended to the session stream. */
export function sessionSeqKey(sessionId: string): string {
  return `yuxi:event-seq:{${sessionId}}`;
}

/** The highest run epoch announced on the session stream: live events of older runs are refused. */
export function sessionFenceKey(sessionId: string): string {
  return `yuxi:event-fence:{${sessionId}}`;
}

export function sessionIdFromStreamKey(key: string): string {
  return key.slice(key.indexOf('{') + 1, key.lastIndexOf('}'));
}
