import { lchown, mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Makes `dir` a workspace a sandbox of uid/gid can use: created if missing (0700: no other user of
 * the host reads it), it and everything in it owned by uid/gid (files the worker wrote there, as
 * root, stay writable by the commands; a symlink is changed itself, never what it points to).
 * bwrap binds it as that user, so each parent folder must let uid/gid pass: one that does not is
 * an error that names it. Only root may give files away: run by another user, ownership is left as
 * it is (the worker's own user is then the sandbox's).
 */
export async function prepareWorkspaceDir(dir: string, uid: number, gid: number): Promise<void> {
  // Folders made on the way may be passed through (0711), not listed; the workspace is 0700.
  await mkdir(path.dirname(path.resolve(dir)), { recursive: true, mode: 0o711 });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (process.getuid?.() !== 0) return;
  const blocked = await closedParent(dir, uid, gid);
  if (blocked !== null) throw new Error(`the sandbox user ${uid} cannot pass through ${blocked} to reach its workspace: let it (chmod o+x) or keep SANDBOX_DIR elsewhere`);
  await lchown(dir, uid, gid);
  const entries = await readdir(dir, { recursive: true });
  for (const entry of entries) await lchown(path.join(dir, entry), uid, gid);
}

/** The first parent folder of `dir` that uid/gid may not search, or null. */
async function closedParent(dir: string, uid: number, gid: number): Promise<string | null> {
  let current = path.dirname(path.resolve(dir));
  for (;;) {
    const { mode, uid: owner, gid: group } = await stat(current);
    const searchBit = owner === uid ? 0o100 : group === gid ? 0o010 : 0o001;
    if ((mode & searchBit) === 0) return current;
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}
