import { lchown, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * Makes `dir` a workspace a sandbox of uid/gid can use: created if missing (0700: no other user of
 * the host reads it), it and everything in it owned by uid/gid (files the worker wrote there, as
 * root, stay writable by the commands; a symlink is changed itself, never what it points to). Its
 * parent folders must let uid/gid pass (bwrap binds it as that user). Only root may give files
 * away: run by another user, the ownership is left as it is (the worker's own user is then the
 * sandbox's).
 */
export async function prepareWorkspaceDir(dir: string, uid: number, gid: number): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (process.getuid?.() !== 0) return;
  await lchown(dir, uid, gid);
  const entries = await readdir(dir, { recursive: true });
  for (const entry of entries) await lchown(path.join(dir, entry), uid, gid);
}
