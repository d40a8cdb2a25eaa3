import type { Calculator } from './calculator.js';
import { listFiles, ocrParseFile, readFile } from './file-tools.js';
import type { ToolCallContext, ToolExecutor, ToolOutcome, WorkdirFiles } from './tool.types.js';

export const BUILTIN_TOOL_NAMES = ['ask_user', 'calculator', 'current_time', 'list_files', 'read_file', 'ocr_parse_file', 'web_search'] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

export interface BuiltinToolDefinition {
  name: BuiltinToolName;
  description: string;
  parameters: Record<string, unknown>;
  /** `user`: the turn waits for the person's answer; `server`: the worker runs it (idempotent by nature). */
  executor: Extract<ToolExecutor, 'user' | 'server'>;
  /**
   * Whether a call may change something outside the turn (ResolvedTool.sideEffects), decided per
   * builtin: every one is a read (a file, the clock, a search provider) or a question to the user.
   */
  sideEffects: boolean;
}

/** The arguments of the tools that read one workdir file (read_file, ocr_parse_file). */
const FILE_ID_PARAMETERS = {
  type: 'object',
  properties: { file_id: { type: 'string', pattern: '^[0-9a-f]{32}$', description: 'As listed by list_files or in the attachment list of a user message.' } },
  required: ['file_id'],
  additionalProperties: false,
};

export const BUILTIN_TOOLS: Readonly<Record<BuiltinToolName, BuiltinToolDefinition>> = {
  ask_user: {
    name: 'ask_user',
    description:
      'Ask the user a question and wait for the answer. Offer options when the answer is a choice; ' +
      'set multi_select to accept several, allow_other to accept a free-text answer besides the options.',
    parameters: {
      type: 'object',
      properties: {
        question: { type: 'string', minLength: 1, maxLength: 4000, description: 'The question, as the user should read it.' },
        options: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 500 }, maxItems: 32, description: 'Possible answers.' },
        multi_select: { type: 'boolean', description: 'Whether several options may be chosen.' },
        allow_other: { type: 'boolean', description: 'Whether an answer outside the options is accepted.' },
      },
      required: ['question'],
      additionalProperties: false,
    },
    executor: 'user',
    sideEffects: false,
  },
  calculator: {
    name: 'calculator',
    description:
      'Evaluate a math expression exactly (mathjs syntax): arithmetic, powers, functions such as sqrt, ' +
      'sin, log, units ("5 cm to inch"), matrices. Returns the result with up to 14 significant digits.',
    parameters: {
      type: 'object',
      properties: { expression: { type: 'string', minLength: 1, maxLength: 1000, description: 'e.g. "(3 + 4) * 2 ^ 10"' } },
      required: ['expression'],
      additionalProperties: false,
    },
    executor: 'server',
    sideEffects: false,
  },
  current_time: {
    name: 'current_time',
    description: 'The current date and time, in UTC and in the given IANA time zone (default UTC).',
    parameters: {
      type: 'object',
      properties: { timezone: { type: 'string', maxLength: 100, description: 'IANA time zone, e.g. "Europe/Paris".' } },
      additionalProperties: false,
    },
    executor: 'server',
    sideEffects: false,
  },
  list_files: {
    name: 'list_files',
    description:
      'List the files of this session\'s workdir (attached by the user; shared by every session of the session\'s project): file_id, filename, mime_type and size of each.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    executor: 'server',
    sideEffects: false,
  },
  read_file: {
    name: 'read_file',
    description:
      'Read a file of this session\'s workdir (shared by every session of the session\'s project) by its file_id: the text of a text file (txt, md, csv, json), the text of each page of a PDF. Images have no text to read.',
    parameters: FILE_ID_PARAMETERS,
    executor: 'server',
    sideEffects: false,
  },
  ocr_parse_file: {
    name: 'ocr_parse_file',
    description:
      'Read a file of this session\'s workdir with OCR by its file_id: the text recognised in an image (PNG, JPEG, GIF, WebP; English), a PDF\'s text layer with OCR for its scanned pages, a text file as read_file does. Slower than read_file: use it for images and scanned documents.',
    parameters: FILE_ID_PARAMETERS,
    executor: 'server',
    sideEffects: false,
  },
  // Offered only where the deployment configures a provider (WEB_SEARCH_PROVIDER); run by WebSearch, not executeBuiltin.
  web_search: {
    name: 'web_search',
    description:
      'Search the web. Returns numbered results, each with a title, a URL and a snippet; cite the results you use as [n](url). ' +
      'Snippets are short: they say what a page is about, not everything it says.',
    parameters: webSearchParameters(20),
    executor: 'server',
    sideEffects: false,
  },
};

/** web_search's arguments; `count` bounded by the deployment's WEB_SEARCH_MAX_RESULTS. */
export function webSearchParameters(maxResults: number): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: 400, description: 'What to search for, as you would type it into a search engine.' },
      count: { type: 'integer', minimum: 1, maximum: maxResults, description: `How many results at most (default and most: ${maxResults}).` },
    },
    required: ['query'],
    additionalProperties: false,
  };
}

export function isBuiltinToolName(name: string): name is BuiltinToolName {
  return (BUILTIN_TOOL_NAMES as readonly string[]).includes(name);
}

/** Runs a worker-executed builtin; `ask_user` is answered by a person, never here. */
export async function executeBuiltin(
  name: string,
  args: Record<string, unknown>,
  ctx: ToolCallContext,
  calculator: Calculator,
  files: WorkdirFiles,
): Promise<ToolOutcome> {
  ctx.signal.throwIfAborted();
  switch (name) {
    case 'calculator':
      if (typeof args.expression !== 'string') return { success: false, output: 'calculator error: expression must be a string' };
      return calculator.evaluate(args.expression, ctx.signal);
    case 'current_time':
      return currentTime(args.timezone);
    case 'list_files':
      return listFiles(files, ctx.sessionId);
    case 'read_file':
      return readFile(files, ctx.sessionId, args.file_id, ctx.signal);
    case 'ocr_parse_file':
      return ocrParseFile(files, ctx.sessionId, args.file_id, ctx.signal);
    default:
      throw new Error(`builtin tool ${name} is not executed by the worker`);
  }
}

/** `{"iso","timezone","local","weekday"}`: `local` is ISO 8601 with the zone's offset at that instant. */
export function currentTime(timezone: unknown = 'UTC', now = new Date()): ToolOutcome {
  if (typeof timezone !== 'string' || timezone === '') return { success: false, output: 'current_time error: timezone must be a non-empty string' };
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      weekday: 'long',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    });
  } catch {
    return { success: false, output: `current_time error: unknown time zone "${timezone}" (use an IANA name such as "Europe/Paris")` };
  }
  const parts = Object.fromEntries(format.formatToParts(now).map((p) => [p.type, p.value]));
  // `longOffset` reads "GMT+02:00", or plain "GMT" at offset zero.
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : parts.timeZoneName.replace('GMT', '');
  const local = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
  const output = { iso: now.toISOString(), timezone: format.resolvedOptions().timeZone, local, weekday: parts.weekday };
  return { success: true, output: JSON.stringify(output) };
}
