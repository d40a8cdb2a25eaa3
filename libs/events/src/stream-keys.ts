export function sessionStreamKey(sessionId: string): string {
  return `yuxi:session-events:{${sessionId}}`;
}

export function sessionIdFromStreamKey(key: string): string {
  return key.slice(key.indexOf('{') + 1, key.lastIndexOf('}'));
}
