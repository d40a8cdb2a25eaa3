import { createHmac, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API key secrets: `yuxi_` + 36 random base62 characters + a 6-character base62 CRC32 of them.
 * The fixed prefix lets secret scanners recognise a leaked key; the checksum lets them (and us)
 * tell a real key from a typo without a database lookup.
 */
export const KEY_PREFIX = 'yuxi_';
const BODY_LENGTH = 36;
const CHECKSUM_LENGTH = 6;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Keys are found by their first characters (prefix + 7), then compared by hash. */
export const LOOKUP_LENGTH = 12;

export function generateKeySecret(): string {
  const bytes = randomBytes(BODY_LENGTH);
  const body = Array.from(bytes, (byte) => BASE62[byte % 62]).join('');
  return `${KEY_PREFIX}${body}${checksum(body)}`;
}

/** Whether a `yuxi_` secret carries a valid checksum; other secrets (bootstrap keys, older keys) are not in this format. */
export function isWellFormedKey(secret: string): boolean {
  if (!secret.startsWith(KEY_PREFIX) || secret.length !== KEY_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH) return false;
  const body = secret.slice(KEY_PREFIX.length, KEY_PREFIX.length + BODY_LENGTH);
  return /^[0-9A-Za-z]+$/.test(body) && checksum(body) === secret.slice(-CHECKSUM_LENGTH);
}

export function keyedHash(secret: string, serverSecret: string): string {
  return createHmac('sha256', serverSecret).update(secret).digest('hex');
}

function checksum(body: string): string {
  let value = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i += 1) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}
