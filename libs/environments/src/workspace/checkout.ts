import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, opendir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { EXECUTABLE_MODE, FILE_MODE, type Manifest, type ManifestEntry, sameEntry, SYMLINK_MODE } from './manifest.js';
import { chownIfRoot, ensureDirectories, type Ownership, writeInside } from './safe-fs.js';

/** How big a workspace may grow: past either bound a call's changes are not committed. */
export interface WorkspaceBounds {
  maxFiles: number;
  maxBytes: number;
}

export type ScanResult = { ok: true; manifest: Manifest } | { ok: false; reason: string };

/** Where syncTo gets the bytes of a version's entries. */
export interface BlobSource {
  /** A file's bytes, streamed. */
  open(hash: string): Promise<Readable>;
  /** A symlink's target (a few bytes). */
  fetch(hash: string): Promise<Buffer>;
}

const run = promisify(execFile);

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
   * recorded as one, its target as its content). Every entry but a directory counts against the
   * file bound (sockets, pipes and devices too, though they are not workspace content); directories
   * are read one entry at a time, so a huge one is never loaded whole, and the walk stops as soon
   * as a bound is passed. A name that is not UTF-8 cannot be a manifest path: `invalidNames`
   * 'refuse' fails the scan naming it, 'delete' removes it (bringing the checkout to a version).
   * A file system error (a directory the worker may not read) fails the scan, never throws.
   */
  async scan(bounds: WorkspaceBounds, invalidNames: 'refuse' | 'delete' = 'refuse'): Promise<ScanResult> {
    try {
      return await this.walk(bounds, invalidNames);
    } catch (failure) {
      const code = (failure as NodeJS.ErrnoException).code;
      if (typeof code !== 'string') throw failure;
      return { ok: false, reason: `the workspace could not be read (${code}): ${(failure as Error).message.replace(this.dir, '/workspace')}` };
    }
  }

  private async walk(bounds: WorkspaceBounds, invalidNames: 'refuse' | 'delete'): Promise<ScanResult> {
    const cache = await this.loadCache();
    const fresh: StatCache = {};
    const manifest: Manifest = {};
    let files = 0;
    let bytes = 0;
    const pending = [''];
    while (pending.length > 0) {
      const relDir = pending.pop()!;
      const dirPath = path.join(this.dir, relDir);
      // Buffer names: a name that is not UTF-8 is still one the file system can look up.
      const dir = await opendir(dirPath, { encoding: 'buffer' as BufferEncoding, bufferSize: 256 });
      for await (const dirent of dir) {
        const raw = dirent.name as unknown as Buffer;
        const name = raw.toString('utf8');
        if (!Buffer.from(name, 'utf8').equals(raw)) {
          const shown = JSON.stringify(relDir === '' ? name : `${relDir}/${name}`);
          if (invalidNames === 'refuse') return { ok: false, reason: `/workspace/${shown.slice(1, -1)} is not a valid UTF-8 name: files need UTF-8 names (the bytes that are not are shown as \ufffd)` };
          await rm(Buffer.concat([Buffer.from(`${dirPath}/`), raw]), { force: true, recursive: true });
          continue;
        }
        const rel = relDir === '' ? name : `${relDir}/${name}`;
        const full = path.join(this.dir, rel);
        const stat = await lstat(full);
        if (stat.isDirectory()) {
          pending.push(rel);
          continue;
        }
        files++;
        if (stat.isFile() || stat.isSymbolicLink()) bytes += stat.size;
        // Returning ends the loop, which closes the directory.
        if (files > bounds.maxFiles) return { ok: false, reason: `the workspace would hold more than ${bounds.maxFiles} files` };
        if (bytes > bounds.maxBytes) return { ok: false, reason: `the workspace would hold more than ${Math.floor(bounds.maxBytes / 1048576)} MiB` };
        if (!stat.isFile() && !stat.isSymbolicLink()) continue;
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

  /** A symlink's target, as the scan hashed it. */
  async readLink(rel: string): Promise<Buffer> {
    return Buffer.from(await readlink(path.join(this.dir, rel), { encoding: 'buffer' }));
  }

  /** A file's bytes as a stream (never whole in memory); the stream closes the file when it ends or fails. */
  async openFile(rel: string): Promise<Readable> {
    const handle = await open(path.join(this.dir, rel), constants.O_RDONLY | constants.O_NOFOLLOW);
    return handle.createReadStream();
  }

  /**
   * Brings the checkout to `target` from `current` (what a scan found): removes what the target
   * does not hold, writes what differs with bytes from `source` (only those; files streamed).
   * Whatever a command left in the way (a symlink where a directory should be) is replaced, never followed.
   */
  async syncTo(current: Manifest, target: Manifest, source: BlobSource): Promise<void> {
    for (const rel of Object.keys(current)) {
      if (!sameEntry(current[rel], target[rel])) await rm(path.join(this.dir, rel), { force: true, recursive: true });
    }
    for (const [rel, entry] of Object.entries(target)) {
      if (sameEntry(current[rel], entry)) continue;
      if (entry[2] === SYMLINK_MODE) {
        const bytes = await source.fetch(entry[0]);
        const parent = path.dirname(rel);
        if (parent !== '.') await ensureDirectories(this.dir, parent, this.owner, true);
        await rm(path.join(this.dir, rel), { force: true, recursive: true });
        await symlink(bytes.toString(), path.join(this.dir, rel));
        await chownIfRoot(path.join(this.dir, rel), this.owner);
      } else {
        await writeInside(this.dir, rel, await source.open(entry[0]), entry[2], this.owner, true);
      }
    }
  }

  /** Empties the checkout (its files are not what any version holds and cannot be trusted). */
  async wipe(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true }).catch(async () => {
      // A command may have left directories the worker (when not root) cannot list or empty
      // (chmod 000): give the owner back its rights (symlinks are not followed), then remove.
      await run('chmod', ['-R', 'u+rwX', this.dir]).catch(() => undefined);
      await rm(this.dir, { recursive: true, force: true });
    });
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
