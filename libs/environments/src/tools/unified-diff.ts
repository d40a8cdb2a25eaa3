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

/**
 * The work one patch may cost, in lines compared, copied or split: past it the hunk being applied
 * fails and nothing changes. It keeps a patch linear-bounded whatever its shape (a huge context
 * hunk over a file of identical lines would otherwise cost file lines x hunk lines compares, on the
 * worker's event loop); a 10 MB file of short lines costs a few million to split, copy and join.
 */
export const PATCH_WORK_BUDGET = 30_000_000;
/** How far from the line a hunk's header names it is searched for line by line before the index is used. */
const NEAR_WINDOW = 1_000;
/** A patch holds at most this many hunks (all files together). */
export const PATCH_MAX_HUNKS = 10_000;

class OverBudget extends Error {}

/** Counts a patch's work against PATCH_WORK_BUDGET. */
class Work {
  private spent = 0;
  spend(units: number): boolean {
    this.spent += units;
    return this.spent <= PATCH_WORK_BUDGET;
  }
}

/** Applies `patch`; `read` gives a file's current text (null: no such file). */
export function applyUnifiedDiff(patch: string, read: (path: string) => string | null): PatchResult {
  let parsed: FilePatch[];
  try {
    parsed = parsePatch(patch);
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
  if (parsed.length === 0) return { ok: false, error: 'the patch holds no file: expected "--- a/<path>" and "+++ b/<path>" headers followed by "@@" hunks' };
  const hunkCount = parsed.reduce((sum, file) => sum + file.hunks.length, 0);
  if (hunkCount > PATCH_MAX_HUNKS) return { ok: false, error: `the patch holds ${hunkCount} hunks, more than ${PATCH_MAX_HUNKS}: split it into several patches; nothing was changed` };
  const work = new Work();
  // Files as the patch has left them so far (a patch may touch one file twice), kept as lines so a
  // second touch does not split the text again.
  const state = new Map<string, Lines | null>();
  const current = (path: string): Lines | null => {
    if (state.has(path)) return state.get(path)!;
    const text = read(path);
    return text === null ? null : splitLines(text);
  };
  for (const file of parsed) {
    const path = (file.newPath ?? file.oldPath)!;
    if (file.oldPath !== null && file.newPath !== null && file.oldPath !== file.newPath) {
      return { ok: false, error: `renaming ${file.oldPath} to ${file.newPath} is not supported: delete the old file and create the new one` };
    }
    const before = file.oldPath === null ? null : current(file.oldPath);
    if (file.oldPath === null && current(path) !== null) return { ok: false, error: `${path} already exists: a patch from /dev/null creates new files only` };
    if (file.oldPath !== null && before === null) return { ok: false, error: `${file.oldPath} does not exist` };
    const applied = applyHunks(path, before ?? splitLines(''), file.hunks, work);
    if (!('lines' in applied)) return applied;
    if (file.newPath === null && applied.lines.length > 0) return { ok: false, error: `${path}: a deletion must remove every line of the file` };
    state.set(path, file.newPath === null ? null : applied);
  }
  return { ok: true, files: [...state].map(([path, lines]) => ({ path, content: lines === null ? null : joinLines(lines) })) };
}

/**
 * The hunks applied in order onto a copy: each is looked for at or after where the previous one
 * ended (in the file as it was), nearest to the line its header names.
 */
function applyHunks(path: string, file: Lines, hunks: Hunk[], work: Work): Lines | { ok: false; error: string } {
  const { lines } = file;
  const out: string[] = [];
  let finalNewline = file.finalNewline;
  let cursor = 0;
  for (const [index, hunk] of hunks.entries()) {
    const where = `${path}: hunk ${index + 1} (@@ -${hunk.oldStart})`;
    let at: number;
    try {
      at = locate(lines, hunk.oldLines, Math.max(0, hunk.oldStart - 1), cursor, work);
    } catch (error) {
      if (!(error instanceof OverBudget)) throw error;
      return { ok: false, error: `${where}: finding where it applies costs more than this tool allows for one patch (${PATCH_WORK_BUDGET} line compares): give its exact line numbers, less context, or a smaller file; nothing was changed` };
    }
    if (at === -1) {
      return { ok: false, error: `${where} does not apply: its context and removed lines do not match the file; nothing was changed` };
    }
    const reachesEnd = at + hunk.oldLines.length === lines.length;
    if (hunk.oldNoNewline && (!reachesEnd || file.finalNewline)) {
      return { ok: false, error: `${path}: hunk ${index + 1} expects the file to end without a newline; nothing was changed` };
    }
    if (!work.spend(at - cursor + hunk.newLines.length)) return { ok: false, error: `${where}: the patch costs more than this tool allows for one patch (${PATCH_WORK_BUDGET} lines copied); nothing was changed` };
    for (let line = cursor; line < at; line++) out.push(lines[line]!);
    for (const line of hunk.newLines) out.push(line);
    cursor = at + hunk.oldLines.length;
    if (reachesEnd) finalNewline = !hunk.newNoNewline;
  }
  if (!work.spend(lines.length - cursor)) return { ok: false, error: `${path}: the patch costs more than this tool allows for one patch (${PATCH_WORK_BUDGET} lines copied); nothing was changed` };
  for (let line = cursor; line < lines.length; line++) out.push(lines[line]!);
  return { lines: out, eol: file.eol, finalNewline };
}

/**
 * Where `needle` occurs in `lines` at or after `from`, the nearest to `expected`. The lines around
 * `expected` first (where a correct header puts it), then only the places whose first line matches,
 * from an index built once; every line compared is spent from `work` (OverBudget past it).
 */
function locate(lines: string[], needle: string[], expected: number, from: number, work: Work): number {
  const last = lines.length - needle.length;
  if (last < from) return -1;
  const matches = (at: number) => {
    for (let index = 0; index < needle.length; index++) {
      if (!work.spend(1)) throw new OverBudget();
      if (lines[at + index] !== needle[index]) return false;
    }
    return true;
  };
  const start = Math.min(Math.max(expected, from), last);
  for (let distance = 0; distance <= NEAR_WINDOW; distance++) {
    for (const at of distance === 0 ? [start] : [start - distance, start + distance]) {
      if (at >= from && at <= last && matches(at)) return at;
    }
  }
  // Farther away: one pass over the file for the candidates (their first line matches), nearest first.
  if (!work.spend(last - from + 1)) throw new OverBudget();
  const first = needle[0];
  let best = -1;
  for (let at = from; at <= last; at++) {
    if (Math.abs(at - start) <= NEAR_WINDOW || lines[at] !== first) continue;
    if (best !== -1 && Math.abs(at - start) >= Math.abs(best - start)) break;
    if (matches(at)) best = at;
  }
  return best;
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
