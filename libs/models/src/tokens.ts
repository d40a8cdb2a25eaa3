/**
 * Token counting for model contexts, with `gpt-tokenizer` (o200k_base, the encoding of the GPT-4o,
 * 4.1, 5 and o-series models): pure JavaScript (no native build, no WASM, so `npm ci` needs no
 * toolchain), maintained, and exact for OpenAI's current models; for other OpenAI-compatible
 * models it is an estimate the provider's reported `prompt_tokens` corrects (ContextManager.observe in
 * libs/runtime). Loading the encoding costs ~0.3 s and ~70 MB, so only the worker loads it (at
 * start); everything else asks `countTokensIfLoaded`, which answers null before that, and the
 * worker counts what was left uncounted when it builds a context.
 */

type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base');

/** Special-token strings in user text are counted as text, never refused. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * What an image of unknown size costs in a context: OpenAI's price of a 1024×1024 image at high
 * detail (`imageTokens(1024, 1024)`). Used where only the number of images is known (the stored
 * items' estimates); a request whose images were measured counts each by its size.
 */
export const IMAGE_TOKENS = 765;

/** OpenAI's high-detail scaling: fit in a 2048 × 2048 square, then the shortest side at most 768. */
const IMAGE_MAX_SIDE = 2048;
const IMAGE_MAX_SHORT_SIDE = 768;
const IMAGE_TILE = 512;
const IMAGE_BASE_TOKENS = 85;
const IMAGE_TILE_TOKENS = 170;

/**
 * The size a provider actually looks at for a `width` × `height` image at high detail (OpenAI's
 * documented scaling; never enlarged). Sending more pixels than this buys the model nothing, so
 * it is also the size the worker downscales larger images to before a request.
 */
export function modelImageSize(width: number, height: number): { width: number; height: number } {
  const fit = Math.min(1, IMAGE_MAX_SIDE / Math.max(width, height));
  const scale = fit * Math.min(1, IMAGE_MAX_SHORT_SIDE / (Math.min(width, height) * fit));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** An image's tokens at high detail: 85 plus 170 per 512-pixel tile of its scaled size (OpenAI's formula). */
export function imageTokens(width: number, height: number): number {
  const scaled = modelImageSize(width, height);
  return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * Math.ceil(scaled.width / IMAGE_TILE) * Math.ceil(scaled.height / IMAGE_TILE);
}
/** Per message: the role and the separators a chat template adds around its content. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

let encoding: Encoding | null = null;
let loading: Promise<Encoding> | null = null;

/** Loads the encoding once (the worker calls it at start); later calls return at once. */
export async function loadTokenizer(): Promise<void> {
  if (encoding) return;
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((module) => (encoding = module));
  await loading;
}

/** Tokens of a text; loads the encoding first when needed. */
export async function countTokens(text: string): Promise<number> {
  await loadTokenizer();
  return countLoaded(text);
}

/** Tokens of a text once the encoding is loaded; null before (the count is left to the worker). */
export function countTokensIfLoaded(text: string): number | null {
  return encoding ? countLoaded(text) : null;
}

function countLoaded(text: string): number {
  if (text.length === 0) return 0;
  let total = 0;
  let from = 0;
  for (const [start, end] of longRuns(text)) {
    if (start > from) total += encoding!.countTokens(text.slice(from, start), AS_TEXT);
    for (let piece = start; piece < end; ) {
      let cut = Math.min(piece + MAX_RUN_CHARS, end);
      // Never between the halves of a surrogate pair.
      if (cut < end && isHighSurrogate(text.charCodeAt(cut - 1))) cut += 1;
      total += encoding!.countTokens(text.slice(piece, cut), AS_TEXT);
      piece = cut;
    }
    from = end;
  }
  return total + (from < text.length ? encoding!.countTokens(text.slice(from), AS_TEXT) : 0);
}

/**
 * The longest run of whitespace or of non-whitespace counted as one. Byte-pair merging costs the
 * square of a pre-token's length (a 64,000-character word took 1.45 s, a 1 MB one minutes, holding
 * the worker's event loop and the claiming transaction), and a pre-token never spans more than one
 * such run (plus one leading character). Longer runs are counted in pieces of this length: linear
 * whatever the text's shape, and the same count for ordinary text, where no run is this long (a
 * piece boundary may shift a long run's count by a token or so; these are estimates anyway).
 */
export const MAX_RUN_CHARS = 512;

/** [start, end) of each run of whitespace or of non-whitespace longer than MAX_RUN_CHARS: one pass. */
function* longRuns(text: string): Generator<[number, number]> {
  let runStart = 0;
  let runIsSpace = isSpace(text.charCodeAt(0));
  for (let i = 1; i <= text.length; i++) {
    const space = i < text.length ? isSpace(text.charCodeAt(i)) : !runIsSpace;
    if (space === runIsSpace) continue;
    if (i - runStart > MAX_RUN_CHARS) yield [runStart, i];
    runStart = i;
    runIsSpace = space;
  }
}

/** The characters `\s` matches (the tokenizer's pre-token pattern splits on them). */
function isSpace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) ||
    code === 0x20 ||
    code === 0x85 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * The context window of a model when its agent does not set `context.window_tokens`. `scripted:`
 * models document 32,768 tokens (and refuse a longer request as a provider would); `openai:`
 * models by name, 128,000 for a model this table does not know.
 */
export function defaultWindowTokens(modelRef: string): number {
  const [provider, name = ''] = modelRef.split(/:(.*)/s, 2);
  if (provider === 'scripted') return SCRIPTED_WINDOW_TOKENS;
  return KNOWN_WINDOWS.find(([prefix]) => name.startsWith(prefix))?.[1] ?? 128_000;
}

export const SCRIPTED_WINDOW_TOKENS = 32_768;

/** Longest prefix first. */
const KNOWN_WINDOWS: readonly [string, number][] = [
  ['gpt-4.1', 1_047_576],
  ['gpt-4o', 128_000],
  ['gpt-4-turbo', 128_000],
  ['gpt-4.5', 128_000],
  ['gpt-4-32k', 32_768],
  ['gpt-4', 8_192],
  ['gpt-3.5-turbo', 16_385],
  ['gpt-5', 400_000],
  ['o1-mini', 128_000],
  ['o1', 200_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
];
