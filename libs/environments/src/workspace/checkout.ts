import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EXECUTABLE_MODE, FILE_MODE, type Manifest, type ManifestEntry, sameEntry, SYMLINK_MODE } from './manifest.js';
import { chownIfRoot, ensureDirectories, type Ownership, writeInside } from './safe-fs.js';

/** How big a workspace may grow: past either bound a call's changes are not committed. */
export interface WorkspaceBounds {
  maxFiles: number;
  maxBytes: number;
}

export type ScanResult = { ok: true; manifest: Manifest } | { ok: false; reason: string };

/** What the worker remembers of a file it hashed, to skip hashing it again while it is unchanged. */
type StatKey = [size: number, mtimeMs: number, ctimeMs: number, ino: number];
type StatCache = Record<string, { key: StatKey; entry: ManifestEntry }>;

/**
 * A session's local copy of its workspace on this worker: `<root>/workspace` (what the sandbox
 * binds as /workspace, owned by the sandbox's user) and, beside it and out of any command's reach,
 * the stat cache. The durable copy is the workspace's versions in the file storage; this is a
 * cache that any worker can rebuild.
 */
export class Checkout {
  readonly dir: string;
  private readonly statePath: string;
  private cache: StatCache | null = null;

  constructor(
    readonly root: string,
    private readonly owner: Ownership,
  ) {
    this.dir = path.join(root, 'workspace');
    this.statePath = path.join(root, 'stat-cache.json');
  }

  async prepare(): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o711 });
    // The sandbox's user must pass through the root to reach the workspace (bwrap binds it as
    // that user), without listing it or reading the stat cache (0600, the worker's own).
    await chmod(path.dirname(this.root), 0o711);
    await chmod(this.root, 0o711);
    await mkdir(this.dir, { recursive: true, mode: 0o755 });
    await chownIfRoot(this.dir, this.owner);
  }

  /**
   * The checkout's files as a manifest, walking it without following any symlink (a symlink is
   * recorded as one, its target as its content). Sockets, pipes and devices are not workspace
   * content and are skipped. Stops as soon as a bound is passed.
   */
  async scan(bounds: WorkspaceBounds): Promise<ScanResult> {
    const cache = await this.loadCache();
    const fresh: StatCache = {};
    const manifest: Manifest = {};
    let files = 0;
    let bytes = 0;
    const pending = [''];
    while (pending.length > 0) {
      const relDir = pending.pop()!;
      const entries = await readdir(path.join(this.dir, relDir), { withFileTypes: true });
      for (const dirent of entries) {
        const rel = relDir === '' ? dirent.name : `${relDir}/${dirent.name}`;
        const full = path.join(this.dir, rel);
        // A name the file system gives back but cannot look up again (not valid UTF-8) is skipped.
        const stat = await lstat(full).catch(() => null);
        if (!stat) continue;
        if (stat.isDirectory()) {
          pending.push(rel);
          continue;
        }
        if (!stat.isFile() && !stat.isSymbolicLink()) continue;
        files++;
        bytes += stat.size;
        if (files > bounds.maxFiles) return { ok: false, reason: `the workspace would hold more than ${bounds.maxFiles} files` };
        if (bytes > bounds.maxBytes) return { ok: false, reason: `the workspace would hold more than ${Math.floor(bounds.maxBytes / 1048576)} MiB` };
        const key: StatKey = [stat.size, stat.mtimeMs, stat.ctimeMs, stat.ino];
        const known = cache[rel];
        let entry: ManifestEntry;
        if (known && known.key.every((value, index) => value === key[index])) entry = known.entry;
        else if (stat.isSymbolicLink()) {
          const target = Buffer.from(await readlink(full, { encoding: 'buffer' }));
          entry = [sha256(target), target.byteLength, SYMLINK_MODE];
        } else {
          entry = [await hashFile(full), stat.size, stat.mode & 0o111 ? EXECUTABLE_MODE : FILE_MODE];
        }
        fresh[rel] = { key, entry };
        manifest[rel] = entry;
      }
    }
    await this.saveCache(fresh);
    return { ok: true, manifest };
  }

  /** A file's bytes as the scan hashed them (a symlink: its target). */
  async readEntry(rel: string, entry: ManifestEntry): Promise<Buffer> {
    const full = path.join(this.dir, rel);
    if (entry[2] === SYMLINK_MODE) return Buffer.from(await readlink(full, { encoding: 'buffer' }));
    const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }

  /**
   * Brings the checkout to `target` from `current` (what a scan found): removes what the target
   * does not hold, writes what differs with bytes from `fetch` (only those). Whatever a command
   * left in the way (a symlink where a directory should be) is replaced, never followed.
   */
  async syncTo(current: Manifest, target: Manifest, fetch: (sha256: string) => Promise<Buffer>): Promise<void> {
    for (const rel of Object.keys(current)) {
      if (!sameEntry(current[rel], target[rel])) await rm(path.join(this.dir, rel), { force: true, recursive: true });
    }
    for (const [rel, entry] of Object.entries(target)) {
      if (sameEntry(current[rel], entry)) continue;
      const bytes = await fetch(entry[0]);
      if (entry[2] === SYMLINK_MODE) {
        const parent = path.dirname(rel);
        if (parent !== '.') await ensureDirectories(this.dir, parent, this.owner, true);
        await rm(path.join(this.dir, rel), { force: true, recursive: true });
        await symlink(bytes.toString(), path.join(this.dir, rel));
        await chownIfRoot(path.join(this.dir, rel), this.owner);
      } else {
        await writeInside(this.dir, rel, bytes, entry[2], this.owner, true);
      }
    }
  }

  /** Empties the checkout (its files are not what any version holds and cannot be trusted). */
  async wipe(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
    await rm(this.statePath, { force: true });
    this.cache = {};
    await this.prepare();
  }

  private async loadCache(): Promise<StatCache> {
    if (this.cache) return this.cache;
    try {
      this.cache = JSON.parse(await readFile(this.statePath, 'utf8')) as StatCache;
    } catch {
      this.cache = {};
    }
    return this.cache;
  }

  private async saveCache(cache: StatCache): Promise<void> {
    this.cache = cache;
    await writeFile(this.statePath, JSON.stringify(cache), { mode: 0o600 });
  }
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

async function hashFile(full: string): Promise<string> {
  const hash = createHash('sha256');
  // O_NOFOLLOW: lstat said it is a file, and nothing runs in the sandbox now; this makes sure.
  const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW);
  // The stream closes the handle when it ends or fails.
  for await (const chunk of handle.createReadStream()) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
