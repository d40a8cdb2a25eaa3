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
        // Buffer names: one that is not UTF-8 is still listed (and looked up) as the file system holds it.
        const dirPath = Buffer.from(path.join(this.dir, relDir) + '/');
        const names = (await readdir(dirPath, { encoding: 'buffer' })).sort(Buffer.compare);
        for (const raw of names) {
          if (lines.length >= LIST_MAX_ENTRIES) {
            more = true;
            break;
          }
          const name = raw.toString('utf8');
          const rel = relDir === '' ? name : `${relDir}/${name}`;
          // Names are shown as JSON strings: a newline or quote in a name cannot forge a line.
          const shown = JSON.stringify(rel);
          const full = Buffer.concat([dirPath, raw]);
          const stat = await lstat(full);
          const utf8 = Buffer.from(name, 'utf8').equals(raw);
          if (stat.isDirectory()) {
            lines.push(`${JSON.stringify(`${rel}/`)}${utf8 ? '' : ' (not a UTF-8 name)'}`);
            if (utf8) pending.push(rel);
          } else if (stat.isSymbolicLink()) lines.push(`${shown} -> ${JSON.stringify((await readlink(full, { encoding: 'buffer' })).toString('utf8'))}`);
          else if (stat.isFile()) lines.push(`${shown} (${stat.size} bytes)${utf8 ? '' : ' (not a UTF-8 name)'}`);
          else lines.push(`${shown} (not a regular file)`);
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

  /** A path problem (a symlink, a directory where a file is meant, a missing file, a name too long) is the tool's error output, never a thrown error. */
  private async guard(run: () => Promise<ToolOutcome>): Promise<ToolOutcome> {
    try {
      return await run();
    } catch (failure) {
      if (failure instanceof WorkspaceEscape) return error(failure.message);
      const code = (failure as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return error('no such file or directory');
      if (code === 'ELOOP') return error('the path is a symlink: files are not read or written through symlinks');
      if (code === 'EISDIR' || code === 'ENOTDIR') return error('a directory is where a file was meant, or a file where a directory was meant');
      if (code === 'ENAMETOOLONG') return error('the path (or one of its names) is too long for the file system');
      if (code === 'EACCES' || code === 'EPERM') return error('permission denied (a command may have changed the permissions of a file or directory on the path)');
      if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG') return error('no space left for the file');
      // Any other file system refusal is still about the path or file the model named: its error, never a failed turn.
      if (typeof code === 'string' && code.startsWith('E')) return error(`the file system refused the operation (${code})`);
      throw failure;
    }
  }
}
