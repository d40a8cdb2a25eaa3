import { opendir, lstat } from 'node:fs/promises';
import path from 'node:path';

/** How often a running command's workspace is measured. */
export const WATCH_INTERVAL_MS = 1000;

export interface WorkspaceBound {
  bytes: number;
  files: number;
}

/** Why a workspace is past its bound, in words for the command's last output line; null within it. */
export type WorkspaceExcess = string | null;

/**
 * Measures a workspace against its bound: directories walked with fs.opendir (entries one at a
 * time, never a whole directory loaded), lstat on each (a symlink counted, never followed), and the
 * walk stops as soon as either bound is passed, so one scan costs at most `files + 1` entries
 * whatever the command wrote. Entries that vanish or cannot be read mid-walk are skipped: the
 * command is still writing, and the caller checks the workspace again once it ends.
 */
export async function workspaceExcess(dir: string, bound: WorkspaceBound): Promise<WorkspaceExcess> {
  let files = 0;
  let bytes = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    let handle;
    try {
      handle = await opendir(current);
    } catch {
      continue;
    }
    try {
      for await (const entry of handle) {
        const full = path.join(current, entry.name);
        files += 1;
        if (files > bound.files) return `the workspace holds more than ${bound.files} files and directories`;
        if (entry.isDirectory()) pending.push(full);
        else {
          try {
            bytes += (await lstat(full)).size;
          } catch {
            continue;
          }
          if (bytes > bound.bytes) return `the workspace holds more than ${Math.floor(bound.bytes / (1024 * 1024))} MiB`;
        }
      }
    } catch {
      // The directory went away mid-walk: the next scan sees what is there.
    }
  }
  return null;
}

/**
 * Watches a running command's workspace: a scan every WATCH_INTERVAL_MS, one at a time (the next
 * is timed from the previous one's end), calling `onExcess` once when the workspace passes its
 * bound. stop() ends the watch.
 */
export function watchWorkspace(dir: string, bound: WorkspaceBound, onExcess: (why: string) => void): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout;
  const tick = async () => {
    const why = await workspaceExcess(dir, bound).catch(() => null);
    if (stopped) return;
    if (why !== null) return onExcess(why);
    timer = setTimeout(() => void tick(), WATCH_INTERVAL_MS);
  };
  timer = setTimeout(() => void tick(), WATCH_INTERVAL_MS);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
