// Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256>` over
// "{webhook-id}.{webhook-timestamp}.{body}", keyed by the secret's bytes (not its text).
import { createHmac, randomBytes } from 'node:crypto';

/** The prefix the Standard Webhooks libraries expect on a secret (they strip it before decoding). */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** 32 random bytes: the HMAC-SHA256 block is 64 bytes, the digest 32; more adds nothing. */
const SECRET_BYTES = 32;

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/**
 * The key bytes of a secret, with or without its `whsec_` prefix. Throws on anything that is not
 * canonical, padded base64: Buffer.from(…, 'base64') silently skips bad characters, and a secret
 * decoded to other bytes than the receiver decodes would sign every delivery wrongly.
 */
export function secretBytes(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret;
  const bytes = Buffer.from(encoded, 'base64');
  if (encoded.length === 0 || bytes.length === 0 || bytes.toString('base64') !== encoded) {
    throw new Error(`a webhook secret is ${WEBHOOK_SECRET_PREFIX} followed by base64 (padded, no spaces)`);
  }
  return bytes;
}

/**
 * The `webhook-signature` header value: one `v1,<signature>` per secret, space-separated, so that
 * during a rotation receivers holding either the old or the new secret accept the delivery.
 */
export function signatureHeader(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  // An empty header would send the delivery unsigned; a fractional timestamp would not be what
  // the `webhook-timestamp` header (whole seconds) says.
  if (secrets.length === 0) throw new Error('signing a webhook needs at least one secret');
  if (!Number.isSafeInteger(timestampSeconds)) throw new Error(`a webhook timestamp is whole Unix seconds, not ${timestampSeconds}`);
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets.map((secret) => `v1,${createHmac('sha256', secretBytes(secret)).update(content, 'utf8').digest('base64')}`).join(' ');
}
