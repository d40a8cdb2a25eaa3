/**
 * A unified diff (git-style `--- a/x` / `+++ b/x` headers, `/dev/null` for a new or deleted file,
 * several files per patch) applied to text files, all or nothing: pure, the caller reads the files
 * it names and writes what comes back only when every hunk applied.
 */
export interface PatchedFile {
  path: string;
  /** The new content; null: the file is deleted. */
  content: string | null;
}

export type PatchResult = { ok: true; files: PatchedFile[] } | { ok: false; error: string };

interface Hunk {
  oldStart: number;
  oldLines: string[];
  newLines: string[];
  /** `\ No newline at end of file` after the old side's last line / the new side's. */
  oldNoNewline: boolean;
  newNoNewline: boolean;
}

interface FilePatch {
  oldPath: string | null;
  newPath: string | null;
  hunks: Hunk[];
}

/** A file's text as lines without their ends, how they end, and whether the last one does. */
interface Lines {
  lines: string[];
  eol: '\n' | '\r\n';
  finalNewline: boolean;
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** Applies `patch`; `read` gives a file's current text (null: no such file). */
export function applyUnifiedDiff(patch: string, read: (path: string) => string | null): PatchResult {
  let parsed: FilePatch[];
  try {
    parsed = parsePatch(patch);
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
  if (parsed.length === 0) return { ok: false, error: 'the patch holds no file: expected "--- a/<path>" and "+++ b/<path>" headers followed by "@@" hunks' };
  // Files as the patch has left them so far (a patch may touch one file twice).
  const state = new Map<string, string | null>();
  const current = (path: string) => (state.has(path) ? state.get(path)! : read(path));
  for (const file of parsed) {
    const path = (file.newPath ?? file.oldPath)!;
    if (file.oldPath !== null && file.newPath !== null && file.oldPath !== file.newPath) {
      return { ok: false, error: `renaming ${file.oldPath} to ${file.newPath} is not supported: delete the old file and create the new one` };
    }
    const before = file.oldPath === null ? null : current(file.oldPath);
    if (file.oldPath === null && current(path) !== null) return { ok: false, error: `${path} already exists: a patch from /dev/null creates new files only` };
    if (file.oldPath !== null && before === null) return { ok: false, error: `${file.oldPath} does not exist` };
    const applied = applyHunks(path, before ?? '', file.hunks);
    if (typeof applied !== 'string') return applied;
    if (file.newPath === null && applied !== '') return { ok: false, error: `${path}: a deletion must remove every line of the file` };
    state.set(path, file.newPath === null ? null : applied);
  }
  return { ok: true, files: [...state].map(([path, content]) => ({ path, content })) };
}

function applyHunks(path: string, text: string, hunks: Hunk[]): string | { ok: false; error: string } {
  const file = splitLines(text);
  let offset = 0;
  let searchFrom = 0;
  for (const [index, hunk] of hunks.entries()) {
    const expected = Math.max(0, hunk.oldStart - 1 + offset);
    const at = locate(file.lines, hunk.oldLines, expected, searchFrom);
    if (at === -1) {
      return { ok: false, error: `${path}: hunk ${index + 1} (@@ -${hunk.oldStart}) does not apply: its context and removed lines do not match the file; nothing was changed` };
    }
    const reachesEnd = at + hunk.oldLines.length === file.lines.length;
    if (hunk.oldNoNewline && (!reachesEnd || file.finalNewline)) {
      return { ok: false, error: `${path}: hunk ${index + 1} expects the file to end without a newline; nothing was changed` };
    }
    file.lines.splice(at, hunk.oldLines.length, ...hunk.newLines);
    if (reachesEnd) file.finalNewline = !hunk.newNoNewline;
    offset += hunk.newLines.length - hunk.oldLines.length;
    searchFrom = at + hunk.newLines.length;
  }
  return joinLines(file);
}

/** Where `needle` occurs in `lines` at or after `from`, the nearest to `expected` (line ends compared without their \r). */
function locate(lines: string[], needle: string[], expected: number, from: number): number {
  const matches = (at: number) => needle.every((line, index) => stripCr(lines[at + index]!) === stripCr(line));
  const last = lines.length - needle.length;
  if (last < from) return -1;
  for (let distance = 0; distance <= Math.max(expected - from, last - expected); distance++) {
    for (const at of [expected - distance, expected + distance]) {
      if (at >= from && at <= last && matches(at)) return at;
    }
  }
  return -1;
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

function splitLines(text: string): Lines {
  if (text === '') return { lines: [], eol: '\n', finalNewline: true };
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const finalNewline = text.endsWith('\n');
  const lines = (finalNewline ? text.slice(0, -1) : text).split('\n').map(stripCr);
  return { lines, eol, finalNewline };
}

function joinLines({ lines, eol, finalNewline }: Lines): string {
  if (lines.length === 0) return '';
  return lines.join(eol) + (finalNewline ? eol : '');
}

function parsePatch(patch: string): FilePatch[] {
  const lines = patch.split('\n').map(stripCr);
  const files: FilePatch[] = [];
  let index = 0;
  while (index < lines.length) {
    const line = lines[index]!;
    if (!line.startsWith('--- ') || !lines[index + 1]?.startsWith('+++ ')) {
      if (line.startsWith('@@')) throw new Error(`line ${index + 1}: a hunk before any "--- a/<path>" / "+++ b/<path>" header`);
      index++;
      continue;
    }
    const file: FilePatch = { oldPath: headerPath(line.slice(4), 'a/'), newPath: headerPath(lines[index + 1]!.slice(4), 'b/'), hunks: [] };
    if (file.oldPath === null && file.newPath === null) throw new Error(`line ${index + 1}: both sides are /dev/null`);
    index += 2;
    while (index < lines.length && lines[index]!.startsWith('@@')) {
      const [hunk, next] = parseHunk(lines, index);
      file.hunks.push(hunk);
      index = next;
    }
    if (file.hunks.length === 0) throw new Error(`${file.newPath ?? file.oldPath}: no "@@" hunk after its headers`);
    files.push(file);
  }
  return files;
}

function headerPath(raw: string, prefix: string): string | null {
  // A timestamp after a tab (diff -u) is not part of the name.
  const name = raw.split('\t')[0]!.trim();
  if (name === '/dev/null') return null;
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

function parseHunk(lines: string[], start: number): [Hunk, number] {
  const header = HUNK_HEADER.exec(lines[start]!);
  if (!header) throw new Error(`line ${start + 1}: a malformed hunk header ${JSON.stringify(lines[start])}`);
  let oldLeft = header[2] === undefined ? 1 : Number(header[2]);
  let newLeft = header[4] === undefined ? 1 : Number(header[4]);
  const hunk: Hunk = { oldStart: Number(header[1]), oldLines: [], newLines: [], oldNoNewline: false, newNoNewline: false };
  let index = start + 1;
  let lastSide: 'old' | 'new' | 'both' = 'both';
  while (index < lines.length && (oldLeft > 0 || newLeft > 0 || lines[index]!.startsWith('\\'))) {
    const line = lines[index]!;
    const kind = line === '' ? ' ' : line[0];
    const body = line.slice(1);
    if (kind === ' ' && oldLeft > 0 && newLeft > 0) {
      hunk.oldLines.push(body);
      hunk.newLines.push(body);
      oldLeft--;
      newLeft--;
      lastSide = 'both';
    } else if (kind === '-' && oldLeft > 0) {
      hunk.oldLines.push(body);
      oldLeft--;
      lastSide = 'old';
    } else if (kind === '+' && newLeft > 0) {
      hunk.newLines.push(body);
      newLeft--;
      lastSide = 'new';
    } else if (kind === '\\') {
      if (lastSide !== 'new') hunk.oldNoNewline = true;
      if (lastSide !== 'old') hunk.newNoNewline = true;
    } else {
      throw new Error(`line ${index + 1}: the hunk at line ${start + 1} has fewer lines than its header says, or a line not starting with " ", "-" or "+"`);
    }
    index++;
  }
  if (oldLeft > 0 || newLeft > 0) throw new Error(`line ${start + 1}: the hunk ends before the lines its header counts`);
  return [hunk, index];
}
