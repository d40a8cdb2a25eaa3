/** One model call of a scripted turn: a tool call (`[[tool:…]]`) or a question (`[[ask:…]]`, the `ask_user` tool). */
export interface ScriptStep {
  kind: 'tool' | 'ask';
  name: string;
  /** The call's arguments: compact JSON, or the raw text when it was not valid JSON (to script a bad call). */
  arguments: string;
}

export interface Script {
  delayMs: number;
  words: number | null;
  fail: string | null;
  steps: ScriptStep[];
  /** The text with every directive removed (what `Echo:` repeats). */
  text: string;
}

export const ASK_TOOL = 'ask_user';

const FILLER = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit'];
const HEAD = /\[\[(\w+)(:)?/y;
/** Longer than any tool name (64 characters, MCP prefixes included): a name scan stops here. */
const TOOL_NAME = /\s*([^\s\]{]{1,256})\s*/y;

/**
 * The parser is linear in the text's length whatever the text (it runs on user input in the
 * worker): a failed directive is retried from the next `[[`, so every scan that could otherwise run
 * to the end of the text again and again is either a cursor that only moves forward (the next `]`
 * and `]]`) or drawn from a budget of JSON characters proportional to the text.
 */
interface Scan {
  text: string;
  nextBracket: Cursor;
  nextClose: Cursor;
  /** JSON characters `balancedEnd` may still read; past it a tool's JSON counts as unbalanced. */
  jsonBudget: number;
}

/** `text.indexOf(needle, from)` for non-decreasing `from`: amortised linear over all calls. */
class Cursor {
  private from = -1;
  private found = -1;

  constructor(
    private readonly text: string,
    private readonly needle: string,
  ) {}

  next(from: number): number {
    if (from >= this.from && (this.found === -1 ? this.from !== -1 : from <= this.found)) return this.found;
    this.from = from;
    this.found = this.text.indexOf(this.needle, from);
    return this.found;
  }
}

interface Directive {
  name: string;
  arg: string;
  json?: string;
  end: number;
}

/**
 * Reads the directives (README "Agents, models and tools") out of a user text. Pure. A tool's
 * JSON is delimited by balancing braces and strings, so it may itself contain `]` or `]]`.
 */
export function parseScript(text: string): Script {
  const script: Script = { delayMs: 0, words: null, fail: null, steps: [], text: '' };
  let rest = '';
  let from = 0;
  const scan: Scan = { text, nextBracket: new Cursor(text, ']'), nextClose: new Cursor(text, ']]'), jsonBudget: 2 * text.length + 1024 };
  for (let at = text.indexOf('[[', from); at !== -1; at = text.indexOf('[[', at + 1)) {
    const directive = readDirective(scan, at);
    if (!directive) continue;
    rest += `${text.slice(from, at)} `;
    from = directive.end;
    at = directive.end - 1;
    apply(script, directive);
  }
  script.text = (rest + text.slice(from)).trim();
  return script;
}

export function filler(count: number): string[] {
  return Array.from({ length: count }, (_, i) => FILLER[i % FILLER.length] ?? 'lorem');
}

function apply(script: Script, { name, arg, json }: Directive): void {
  if (name === 'delay') script.delayMs = clampInt(arg, 0, 600_000);
  else if (name === 'words') script.words = clampInt(arg, 1, 100_000);
  else if (name === 'fail') script.fail = arg.trim() || 'model_error';
  else if (name === 'ask') script.steps.push({ kind: 'ask', name: ASK_TOOL, arguments: JSON.stringify({ question: arg.trim() }) });
  else if (name === 'tool' && arg) script.steps.push({ kind: 'tool', name: arg, arguments: compact(json ?? '{}') });
}

function readDirective(scan: Scan, at: number): Directive | null {
  const { text } = scan;
  HEAD.lastIndex = at;
  const head = HEAD.exec(text);
  if (!head?.[1]) return null;
  const name = head[1];
  const argStart = HEAD.lastIndex;
  if (!head[2]) return text.startsWith(']]', argStart) ? { name, arg: '', end: argStart + 2 } : null;
  if (name === 'tool') return readTool(scan, argStart);
  if (name === 'ask') {
    const close = scan.nextClose.next(argStart);
    return close === -1 ? null : { name, arg: text.slice(argStart, close), end: close + 2 };
  }
  // The argument runs to the first `]`, which must start `]]`.
  const bracket = scan.nextBracket.next(argStart);
  return bracket !== -1 && text.startsWith(']]', bracket) ? { name, arg: text.slice(argStart, bracket), end: bracket + 2 } : null;
}

function readTool(scan: Scan, start: number): Directive | null {
  const { text } = scan;
  TOOL_NAME.lastIndex = start;
  const match = TOOL_NAME.exec(text);
  const toolName = match?.[1] ?? '';
  let at = match ? TOOL_NAME.lastIndex : start;
  let json: string | undefined;
  if (text[at] === '{') {
    const end = balancedEnd(scan, at);
    if (end === -1) return null;
    json = text.slice(at, end);
    at = end;
    while (/\s/.test(text[at] ?? '')) at++;
  }
  return text.startsWith(']]', at) ? { name: 'tool', arg: toolName, json, end: at + 2 } : null;
}

/** The index just past the `{…}` starting at `start`, honouring JSON strings and escapes; -1 if unbalanced. */
function balancedEnd(scan: Scan, start: number): number {
  const { text } = scan;
  let depth = 0;
  let inString = false;
  const stop = Math.min(text.length, start + scan.jsonBudget);
  for (let i = start; i < stop; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') {
      depth--;
      if (depth === 0) {
        scan.jsonBudget -= i + 1 - start;
        return i + 1;
      }
    }
  }
  scan.jsonBudget -= stop - start;
  return -1;
}

function compact(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json));
  } catch {
    return json;
  }
}

function clampInt(raw: string, min: number, max: number): number {
  const value = Number.parseInt(raw, 10);
  return Number.isFinite(value) ? Math.min(Math.max(value, min), max) : min;
}

/** How many facts the scripted summary keeps: the oldest ones and the latest ones. */
const SUMMARY_FIRST = 12;
const SUMMARY_LAST = 28;
const WORDS_PER_FACT = 14;

/**
 * The scripted model's summariser (a `compaction` call): deterministic, no network. It keeps the
 * facts of the previous summary (`- ` lines), the first words of each user message of the
 * transcript and the files attached to it, as facts; past SUMMARY_FIRST + SUMMARY_LAST facts the middle ones go.
 */
export function scriptedSummary(transcript: string): string {
  const facts: string[] = [];
  for (const line of transcript.split('\n')) {
    if (line.startsWith('- ')) facts.push(line.slice(2));
    else if (line.startsWith('[user] ')) {
      facts.push(`user: ${line.slice(7).split(/\s+/).filter(Boolean).slice(0, WORDS_PER_FACT).join(' ')}`);
      const files = attachedFiles(line);
      if (files) facts.push(`files: ${files}`);
    }
  }
  const kept = facts.length > SUMMARY_FIRST + SUMMARY_LAST ? [...facts.slice(0, SUMMARY_FIRST), ...facts.slice(-SUMMARY_LAST)] : facts;
  return ['Facts:', ...kept.map((fact) => `- ${fact}`)].join('\n');
}

/** What `/\[Attached files: ([^\]]*)\]/` captures, in one pass (the regex rescans the line from every marker). */
function attachedFiles(line: string): string | undefined {
  const marker = '[Attached files: ';
  const start = line.indexOf(marker);
  const end = start === -1 ? -1 : line.indexOf(']', start + marker.length);
  return end === -1 ? undefined : line.slice(start + marker.length, end);
}
