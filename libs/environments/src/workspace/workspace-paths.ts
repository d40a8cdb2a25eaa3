import { WORKSPACE_PATH } from '../environment-config.js';

/** A path a tool was given, checked: relative to the workspace, normalised, never leaving it. */
export type CheckedPath = { ok: true; path: string } | { ok: false; error: string };

/**
 * Resolves a tool's `path` argument to a path relative to the workspace root ("" for the root
 * itself): relative paths are taken from /workspace, absolute ones must lie under /workspace.
 * `..` is refused outright (even one that would stay inside): the model never needs it, and a
 * lexical check alone cannot know whether a component it climbs out of is a symlink. Symlinks are
 * checked where the path is used (lstat component by component, O_NOFOLLOW).
 */
export function checkWorkspacePath(raw: unknown, { allowRoot = false } = {}): CheckedPath {
  if (typeof raw !== 'string' || raw.length === 0) return { ok: false, error: 'path must be a non-empty string' };
  if (raw.length > 4096) return { ok: false, error: 'path is longer than 4096 characters' };
  if (raw.includes('\0')) return { ok: false, error: 'path contains a NUL character' };
  let rest = raw.replaceAll('\\', '/');
  if (rest.startsWith('/')) {
    if (rest !== WORKSPACE_PATH && !rest.startsWith(`${WORKSPACE_PATH}/`)) return { ok: false, error: `${raw} is outside the workspace (${WORKSPACE_PATH})` };
    rest = rest.slice(WORKSPACE_PATH.length);
  }
  const parts: string[] = [];
  for (const part of rest.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') return { ok: false, error: `${raw} climbs out with "..": paths stay inside the workspace (${WORKSPACE_PATH})` };
    if (Buffer.byteLength(part) > 255) return { ok: false, error: `a name in ${raw} is longer than 255 bytes` };
    parts.push(part);
  }
  if (parts.length === 0 && !allowRoot) return { ok: false, error: `${raw} names the workspace itself, not a file in it` };
  return { ok: true, path: parts.join('/') };
}

/** The path as a command inside the sandbox sees it (what artifacts show). */
export function absoluteWorkspacePath(relative: string): string {
  return relative === '' ? WORKSPACE_PATH : `${WORKSPACE_PATH}/${relative}`;
}
