/** Longest stored filename, in UTF-8 bytes (what most filesystems accept for one name). */
export const MAX_FILENAME_BYTES = 255;

// Path separators, Windows-reserved characters, and C0/C1 controls, bidi overrides and NUL.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[/\\:*?"<>|\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The name a file is shown under: the client's filename reduced to its last path segment, with
 * separators, reserved and control characters replaced, leading dots and trailing dots and spaces
 * removed, NFC-normalised and cut to 255 bytes (the extension kept). Never used in a storage key;
 * `fallback` stands in for a name with nothing left (e.g. `../..`).
 */
export function sanitizeFilename(raw: string, fallback = 'file'): string {
  const lastSegment = raw.normalize('NFC').split(/[/\\]/).pop() ?? '';
  let name = lastSegment.replace(UNSAFE, '_').replace(/\s+/g, ' ').trim();
  name = name.replace(/^[.\s]+/, '').replace(/[.\s]+$/, '');
  if (name === '' || /^_+$/.test(name)) name = fallback;
  return truncateUtf8(name, MAX_FILENAME_BYTES);
}

/** The lowercase extension after the last dot, without it; '' when there is none. */
export function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return dot > 0 ? filename.slice(dot + 1).toLowerCase() : '';
}

function truncateUtf8(name: string, maxBytes: number): string {
  if (Buffer.byteLength(name) <= maxBytes) return name;
  const ext = extensionOf(name);
  const suffix = ext && Buffer.byteLength(ext) <= 16 ? `.${name.slice(name.length - ext.length)}` : '';
  let stem = name.slice(0, name.length - suffix.length);
  // Whole code points only: never cut a multi-byte character (or a surrogate pair) in two.
  const chars = [...stem];
  while (chars.length > 0 && Buffer.byteLength(chars.join('') + suffix) > maxBytes) chars.pop();
  stem = chars.join('').replace(/[.\s]+$/, '');
  return (stem || 'file') + suffix;
}
