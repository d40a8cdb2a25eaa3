import { constants } from 'node:fs';
import { type FileHandle, lchown, lstat, mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * File access inside a checkout by the worker, which runs as root: a command in the sandbox may
 * have planted symlinks anywhere in the workspace, so no path is ever resolved through one. Every
 * directory on the way is checked with lstat and every file is opened with O_NOFOLLOW; nothing
 * runs in the sandbox while the worker does this (a session's calls are serial and the command's
 * processes are gone), so what lstat saw is what open gets.
 */
export class WorkspaceEscape extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkspaceEscape';
  }
}

/** Who owns what the worker creates in a checkout: the sandbox's user, so its commands can change it. */
export interface Ownership {
  uid: number;
  gid: number;
}

/**
 * Makes `relDir`'s directories under `root`, each a real directory. `replace`: a symlink or file in
 * the way is removed (bringing a checkout to a version); otherwise it is a WorkspaceEscape.
 */
export async function ensureDirectories(root: string, relDir: string, owner: Ownership, replace = false): Promise<void> {
  let current = root;
  for (const part of relDir.split('/').filter(Boolean)) {
    current = path.join(current, part);
    const stat = await lstat(current).catch(missing);
    if (stat?.isDirectory()) continue;
    if (stat) {
      if (!replace) throw new WorkspaceEscape(`${path.relative(root, current)} is ${stat.isSymbolicLink() ? 'a symlink' : 'not a directory'}: paths are not followed through symlinks`);
      await rm(current, { force: true, recursive: true });
    }
    await mkdir(current, { mode: 0o755 });
    await chownIfRoot(current, owner);
  }
}

/** Opens a file below `root` that is a regular file reached through real directories only. */
export async function openInside(root: string, rel: string, flags: number, mode = 0o644): Promise<FileHandle> {
  const parent = path.dirname(rel);
  if (parent !== '.') await checkDirectories(root, parent);
  const target = path.join(root, rel);
  const stat = await lstat(target).catch(missing);
  if (stat?.isSymbolicLink()) throw new WorkspaceEscape(`${rel} is a symlink: files are not read or written through symlinks`);
  if (stat && !stat.isFile()) throw new WorkspaceEscape(`${rel} is ${stat.isDirectory() ? 'a directory' : 'not a regular file'}`);
  const handle = await open(target, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  const opened = await handle.stat();
  if (!opened.isFile()) {
    await handle.close();
    throw new WorkspaceEscape(`${rel} is not a regular file`);
  }
  return handle;
}

/** Writes a whole file below `root` (its directories made), owned by the sandbox's user; `replace` as for ensureDirectories, and for the file itself. */
export async function writeInside(root: string, rel: string, bytes: Uint8Array | AsyncIterable<Uint8Array>, mode: number, owner: Ownership, replace = false): Promise<void> {
  const parent = path.dirname(rel);
  if (parent !== '.') await ensureDirectories(root, parent, owner, replace);
  const target = path.join(root, rel);
  if (replace) {
    const stat = await lstat(target).catch(missing);
    if (stat && !stat.isFile()) await rm(target, { force: true, recursive: true });
  }
  const handle = await openInside(root, rel, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, mode & 0o777);
  try {
    if (bytes instanceof Uint8Array) await handle.writeFile(bytes);
    // A stream is written chunk by chunk: a file of any size, never whole in memory.
    else for await (const chunk of bytes) await handle.write(chunk, 0, chunk.byteLength);
    await handle.chmod(mode & 0o777);
    if (isRoot()) await handle.chown(owner.uid, owner.gid);
  } finally {
    await handle.close();
  }
}

/** Throws unless every component of `relDir` below `root` is a real directory. */
export async function checkDirectories(root: string, relDir: string): Promise<void> {
  let current = root;
  for (const part of relDir.split('/').filter(Boolean)) {
    current = path.join(current, part);
    const stat = await lstat(current).catch(missing);
    if (!stat) throw Object.assign(new Error(`${path.relative(root, current)} does not exist`), { code: 'ENOENT' });
    if (!stat.isDirectory()) throw new WorkspaceEscape(`${path.relative(root, current)} is ${stat.isSymbolicLink() ? 'a symlink' : 'not a directory'}: paths are not followed through symlinks`);
  }
}

export async function chownIfRoot(target: string, owner: Ownership): Promise<void> {
  // Only root can give files away; a worker run as an ordinary user (development) keeps its own.
  if (isRoot()) await lchown(target, owner.uid, owner.gid);
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function missing(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
}
