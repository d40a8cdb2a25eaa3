import { constants } from 'node:fs';
import { lstat, readdir, readlink, rm } from 'node:fs/promises';
import path from 'node:path';
import type { ToolOutcome } from '#libs/tools';
import { checkDirectories, openInside, type Ownership, WorkspaceEscape, writeInside } from '../workspace/safe-fs.js';
import { absoluteWorkspacePath, checkWorkspacePath } from '../workspace/workspace-paths.js';
import { applyUnifiedDiff } from './unified-diff.js';

/** `read_file` returns at most this many characters, with a note saying how much more there is. */
export const READ_MAX_CHARS = 100_000;
/** `list_files` lists at most this many entries. */
export const LIST_MAX_ENTRIES = 1_000;
/** `write_file`'s content, and `apply_patch`'s patch, at most (UTF-8 bytes). */
export const WRITE_MAX_BYTES = 10 * 1024 * 1024;
/** A file `apply_patch` reads to patch is at most this large. */
const PATCH_FILE_MAX_BYTES = 10 * 1024 * 1024;

const error = (output: string): ToolOutcome => ({ success: false, output });

/** The file tools over a checkout's directory (`dir` is what the sandbox sees as /workspace). */
export class FileTools {
  constructor(
    private readonly dir: string,
    private readonly owner: Ownership,
  ) {}

  async writeFile(args: Record<string, unknown>): Promise<ToolOutcome> {
    const checked = checkWorkspacePath(args.path);
    if (!checked.ok) return error(checked.error);
    if (typeof args.content !== 'string') return error('content must be a string');
    const bytes = Buffer.from(args.content, 'utf8');
    if (bytes.byteLength > WRITE_MAX_BYTES) return error(`content is larger than ${WRITE_MAX_BYTES} bytes`);
    return this.guard(async () => {
      const existing = await lstat(path.join(this.dir, checked.path)).catch(() => null);
      await writeInside(this.dir, checked.path, bytes, existing?.isFile() ? existing.mode & 0o777 : 0o644, this.owner);
      return { success: true, output: `Wrote ${bytes.byteLength} bytes to ${absoluteWorkspacePath(checked.path)}` };
    });
  }

  async readFile(args: Record<string, unknown>): Promise<ToolOutcome> {
    const checked = checkWorkspacePath(args.path);
    if (!checked.ok) return error(checked.error);
    return this.guard(async () => {
      const handle = await openInside(this.dir, checked.path, constants.O_RDONLY);
      try {
        const size = (await handle.stat()).size;
        // Enough bytes for READ_MAX_CHARS characters of any UTF-8, no more.
        const buffer = Buffer.alloc(Math.min(size, READ_MAX_CHARS * 4));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
        const bytes = buffer.subarray(0, bytesRead);
        if (bytes.includes(0)) return { success: true, output: `${absoluteWorkspacePath(checked.path)} is a binary file (${size} bytes)` };
        const text = bytes.toString('utf8');
        if (text.length <= READ_MAX_CHARS && bytesRead === size) return { success: true, output: text };
        return { success: true, output: `${text.slice(0, READ_MAX_CHARS)}\n[cut at ${READ_MAX_CHARS} characters: the file is ${size} bytes]` };
      } finally {
        await handle.close();
      }
    });
  }

  async listFiles(args: Record<string, unknown>): Promise<ToolOutcome> {
    const checked = checkWorkspacePath(args.path ?? '.', { allowRoot: true });
    if (!checked.ok) return error(checked.error);
    return this.guard(async () => {
      if (checked.path !== '') await checkDirectories(this.dir, checked.path);
      const lines: string[] = [];
      let more = false;
      const pending = [checked.path];
      while (pending.length > 0 && !more) {
        const relDir = pending.shift()!;
        const entries = (await readdir(path.join(this.dir, relDir), { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
        for (const dirent of entries) {
          if (lines.length >= LIST_MAX_ENTRIES) {
            more = true;
            break;
          }
          const rel = relDir === '' ? dirent.name : `${relDir}/${dirent.name}`;
          const stat = await lstat(path.join(this.dir, rel));
          if (stat.isDirectory()) {
            lines.push(`${rel}/`);
            pending.push(rel);
          } else if (stat.isSymbolicLink()) lines.push(`${rel} -> ${await readlink(path.join(this.dir, rel))}`);
          else if (stat.isFile()) lines.push(`${rel} (${stat.size} bytes)`);
        }
      }
      if (lines.length === 0) return { success: true, output: `${absoluteWorkspacePath(checked.path)} is empty` };
      if (more) lines.push(`[listing stopped at ${LIST_MAX_ENTRIES} entries: list a subdirectory]`);
      return { success: true, output: lines.join('\n') };
    });
  }

  async applyPatch(args: Record<string, unknown>): Promise<ToolOutcome> {
    const patch = args.patch;
    if (typeof patch !== 'string' || patch.length === 0) return error('patch must be a non-empty string (a unified diff)');
    if (Buffer.byteLength(patch) > WRITE_MAX_BYTES) return error(`patch is larger than ${WRITE_MAX_BYTES} bytes`);
    return this.guard(async () => {
      // Read every file the patch names first (checked paths only), then write only if all applies.
      const contents = new Map<string, string | null>();
      const pathErrors: string[] = [];
      for (const match of patch.matchAll(/^(?:---|\+\+\+) (?:[ab]\/)?([^\t\r\n]+)/gm)) {
        const name = match[1]!.trim();
        if (name === '/dev/null' || contents.has(name)) continue;
        const checked = checkWorkspacePath(name);
        if (!checked.ok) pathErrors.push(checked.error);
        else contents.set(name, await this.readText(checked.path));
      }
      if (pathErrors.length > 0) return error(pathErrors.join('\n'));
      const result = applyUnifiedDiff(patch, (name) => contents.get(name) ?? null);
      if (!result.ok) return error(result.error);
      const done: string[] = [];
      for (const file of result.files) {
        const checked = checkWorkspacePath(file.path);
        if (!checked.ok) return error(checked.error);
        if (file.content === null) {
          await checkDirectories(this.dir, path.dirname(checked.path) === '.' ? '' : path.dirname(checked.path));
          await rm(path.join(this.dir, checked.path), { force: true });
          done.push(`deleted ${absoluteWorkspacePath(checked.path)}`);
        } else {
          const existing = await lstat(path.join(this.dir, checked.path)).catch(() => null);
          await writeInside(this.dir, checked.path, Buffer.from(file.content, 'utf8'), existing?.isFile() ? existing.mode & 0o777 : 0o644, this.owner);
          done.push(`${existing ? 'patched' : 'created'} ${absoluteWorkspacePath(checked.path)}`);
        }
      }
      return { success: true, output: `Applied the patch: ${done.join(', ')}` };
    });
  }

  /** A text file's content, null when there is none (a missing file; a symlink or directory is a WorkspaceEscape). */
  private async readText(rel: string): Promise<string | null> {
    const handle = await openInside(this.dir, rel, constants.O_RDONLY).catch((failure: NodeJS.ErrnoException) => {
      if (failure.code === 'ENOENT') return null;
      throw failure;
    });
    if (!handle) return null;
    try {
      if ((await handle.stat()).size > PATCH_FILE_MAX_BYTES) throw new WorkspaceEscape(`${rel} is larger than ${PATCH_FILE_MAX_BYTES} bytes: too large to patch`);
      return (await handle.readFile()).toString('utf8');
    } finally {
      await handle.close();
    }
  }

  /** A path problem (a symlink, a directory where a file is meant, a missing file) is the tool's error output, never a thrown error. */
  private async guard(run: () => Promise<ToolOutcome>): Promise<ToolOutcome> {
    try {
      return await run();
    } catch (failure) {
      if (failure instanceof WorkspaceEscape) return error(failure.message);
      const code = (failure as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return error('no such file or directory');
      if (code === 'ELOOP') return error('the path is a symlink: files are not read or written through symlinks');
      if (code === 'EISDIR' || code === 'ENOTDIR') return error('a directory is where a file was meant, or a file where a directory was meant');
      throw failure;
    }
  }
}
