import { newId } from '#libs/database';

const FILE_ID = /^[0-9a-f]{32}$/;

/** A file id is the 32-hex form of a time-ordered UUIDv7 (the API's `0123456789abcdef…` form): unguessable and index-friendly. */
export function newFileId(): string {
  return newId().replaceAll('-', '');
}

export function isFileId(value: string): boolean {
  return FILE_ID.test(value);
}

/**
 * Storage keys are made here only, from server-generated ids: a client's filename never reaches
 * a key. Every key is `<area>/<uuid or file id>[/…]` of lowercase hex, digits and dashes.
 */
export const storageKeys = {
  /** The uploaded bytes of a draft, until its preparation into a workdir cleans them up. */
  draft: (fileId: string): string => `drafts/${checked(fileId)}`,
  /** The file in its session's workdir: what the agent's tools and the artifact URL read. */
  session: (sessionId: string, fileId: string): string => `sessions/${checkedUuid(sessionId)}/files/${checked(fileId)}`,
  /** An inline image of a message: stored before the submission's session (or input) exists, so keyed by the file id alone. */
  inline: (fileId: string): string => `inline/${checked(fileId)}`,
  /** A workspace file's bytes by their SHA-256: shared by every version (and workspace) holding them, never rewritten. */
  blob: (sha256: string): string => `blobs/${checkedSha(sha256)}`,
};

const SAFE_KEY = /^(drafts\/[0-9a-f]{32}|inline\/[0-9a-f]{32}|blobs\/[0-9a-f]{64}|sessions\/[0-9a-f-]{36}\/files\/[0-9a-f]{32})$/;

/** Whether a key has the shape storageKeys makes (drivers refuse anything else). */
export function isStorageKey(key: string): boolean {
  return SAFE_KEY.test(key);
}

function checked(fileId: string): string {
  if (!isFileId(fileId)) throw new Error(`not a file id: ${JSON.stringify(fileId)}`);
  return fileId;
}

function checkedUuid(id: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) throw new Error(`not a session id: ${JSON.stringify(id)}`);
  return id;
}

function checkedSha(sha256: string): string {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a SHA-256: ${JSON.stringify(sha256)}`);
  return sha256;
}
