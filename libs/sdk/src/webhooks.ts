// Verifying the webhooks the API sends (Standard Webhooks): on the receiving side, wherever fetch
// runs, so WebCrypto only, no Node module.

/** Why a webhook was refused: branch on this, not on the message. */
export type WebhookVerificationReason = 'missing_headers' | 'timestamp_out_of_tolerance' | 'bad_signature' | 'invalid_secret' | 'invalid_body';

/** A delivery that is not, or cannot be shown to be, a genuine and fresh webhook of the API: answer it with 400. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationReason;

  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way, in seconds (default 300): older deliveries may be replays. */
  toleranceSeconds?: number;
  /** The current time in ms (default Date.now); for tests. */
  now?: () => number;
}

/** The header forms a receiver is likely to have: fetch's Headers, or Node's / a framework's plain object. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

// Just the part of WebCrypto used here, declared locally: the SDK compiles both with the DOM
// types (its own package) and with Node's (the repository), whose SubtleCrypto types differ.
interface HmacSubtle {
  importKey(format: 'raw', keyData: Uint8Array, algorithm: { name: 'HMAC'; hash: 'SHA-256' }, extractable: false, usages: ['sign']): Promise<unknown>;
  sign(algorithm: 'HMAC', key: unknown, data: Uint8Array): Promise<ArrayBuffer>;
}

const SECRET_PREFIX = 'whsec_';
// Canonical, padded base64: atob alone would also take spaces and missing padding.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function base64Bytes(text: string): Uint8Array | null {
  if (text === '' || !BASE64.test(text)) return null;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function header(headers: WebhookHeaders, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  // Plain objects may keep the sender's spelling (Webhook-Id): names are case-insensitive.
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(' ') : value;
}

/** Equal length and bytes, in time that depends on the length only: no timing hint of how much of a guess was right. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

/**
 * Checks a webhook delivery and returns its parsed JSON body. `body` must be the raw request body
 * as received (any re-serialisation changes the bytes signed). `secret` is the endpoint's
 * `whsec_…` secret, or several during a rotation (any one matching is enough). Throws a
 * WebhookVerificationError when a header is missing, the timestamp is more than
 * `toleranceSeconds` away from now, no `v1` signature matches, a secret is malformed, or the
 * body is not JSON.
 */
export async function verifyWebhook<T = unknown>(secret: string | string[], headers: WebhookHeaders, body: string, options: VerifyWebhookOptions = {}): Promise<T> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError('missing_headers', 'the webhook-id, webhook-timestamp and webhook-signature headers are required');
  }

  const keys = (Array.isArray(secret) ? secret : [secret]).map((s) => base64Bytes(s.startsWith(SECRET_PREFIX) ? s.slice(SECRET_PREFIX.length) : s));
  if (keys.length === 0 || keys.some((key) => key === null)) {
    throw new WebhookVerificationError('invalid_secret', 'a webhook secret is whsec_ followed by base64');
  }

  const toleranceSeconds = options.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((options.now ?? Date.now)() / 1000);
  const seconds = timestamp.trim();
  if (!/^\d+$/.test(seconds) || Math.abs(nowSeconds - Number(seconds)) > toleranceSeconds) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `webhook-timestamp is not within ${toleranceSeconds} s of now`);
  }

  // Entries are space-separated; Headers.get joins repeated headers with ", ", hence the commas trimmed.
  const candidates = signatures
    .split(/\s+/)
    .map((entry) => entry.replace(/,+$/, ''))
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => base64Bytes(entry.slice(3)))
    .filter((bytes): bytes is Uint8Array => bytes !== null);

  const subtle = (globalThis as unknown as { crypto?: { subtle?: HmacSubtle } }).crypto?.subtle;
  if (!subtle) throw new Error('verifyWebhook needs WebCrypto (globalThis.crypto.subtle)');
  const signed = new TextEncoder().encode(`${id}.${seconds}.${body}`);
  let matched = false;
  for (const key of keys as Uint8Array[]) {
    const cryptoKey = await subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const expected = new Uint8Array(await subtle.sign('HMAC', cryptoKey, signed));
    // Every candidate is compared, match or not, so the time taken does not tell which one did.
    for (const candidate of candidates) matched = constantTimeEqual(expected, candidate) || matched;
  }
  if (!matched) throw new WebhookVerificationError('bad_signature', 'no webhook-signature matches the secret');

  try {
    return JSON.parse(body) as T;
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the webhook body is not JSON');
  }
}
