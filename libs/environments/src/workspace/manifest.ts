/**
 * A workspace version's content: every file by its path relative to the workspace, as
 * [sha256 of the bytes, size in bytes, mode]. The bytes live in the file storage under their hash
 * (shared by every version and every workspace holding them), so a version is only this map.
 */
export type ManifestEntry = [sha256: string, size: number, mode: number];
export type Manifest = Record<string, ManifestEntry>;

/** A regular file, a regular executable file, and a symlink (its blob is the link's target). */
export const FILE_MODE = 0o100644;
export const EXECUTABLE_MODE = 0o100755;
export const SYMLINK_MODE = 0o120000;

export function sameEntry(a: ManifestEntry | undefined, b: ManifestEntry | undefined): boolean {
  if (!a || !b) return a === b;
  return a[0] === b[0] && a[2] === b[2];
}

/** What a call changed relative to the version it started from. */
export interface ManifestChanges {
  /** Added or changed paths, with their new entries. */
  written: Manifest;
  deleted: string[];
}

export function diffManifests(base: Manifest, mine: Manifest): ManifestChanges {
  const written: Manifest = {};
  const deleted: string[] = [];
  for (const [path, entry] of Object.entries(mine)) if (!sameEntry(base[path], entry)) written[path] = entry;
  for (const path of Object.keys(base)) if (!(path in mine)) deleted.push(path);
  return { written, deleted };
}

/**
 * A call's changes merged onto the workspace's current head, which another session of the tree
 * may have moved since the call began: per path, the last writer wins. Paths the call wrote or
 * deleted take its content; every other path keeps the head's (docs/environments.md, "Concurrent
 * writes"). A path that is a file in one and a directory prefix in the other keeps the call's file
 * and drops the head's entries below (or above) it, so the merged tree is always a valid tree.
 */
export function mergeOntoHead(head: Manifest, changes: ManifestChanges): Manifest {
  const merged: Manifest = { ...head };
  for (const path of changes.deleted) delete merged[path];
  const written = new Set(Object.keys(changes.written));
  if (written.size > 0) {
    for (const path of Object.keys(merged)) {
      // A head file below a path the call made a file, or a head file where the call made a directory.
      if (ancestors(path).some((dir) => written.has(dir))) delete merged[path];
    }
    for (const path of written) for (const dir of ancestors(path)) delete merged[dir];
  }
  return Object.assign(merged, changes.written);
}

/** "a/b/c" → ["a", "a/b"]. */
function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let index = path.indexOf('/'); index !== -1; index = path.indexOf('/', index + 1)) out.push(path.slice(0, index));
  return out;
}

export function manifestTotals(manifest: Manifest): { files: number; bytes: number } {
  let bytes = 0;
  const entries = Object.values(manifest);
  for (const [, size] of entries) bytes += size;
  return { files: entries.length, bytes };
}
