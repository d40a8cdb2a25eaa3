// Where webhooks may be delivered: the deployment's outbound address policy (libs/outbound), with
// the webhook rules on top (https only unless private networks are allowed, no credentials in the
// URL) and the webhook's own error code and messages.
import type dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { checkOutboundUrl, guardedLookup as outboundLookup, type OutboundUrlCheck } from '#libs/outbound';

export type WebhookUrlCheck = OutboundUrlCheck;

/**
 * Whether a webhook endpoint URL may be registered: an absolute https URL (http too when
 * `allowPrivate`), without credentials (they would be sent to every delivery's logs), whose host
 * is, or resolves only to, public addresses. `allowPrivate` (development, tests) skips the address
 * checks, and so DNS too. `resolve` gives every address of a host name (A and AAAA).
 */
export function checkWebhookUrl(url: string, allowPrivate: boolean, resolve: (host: string) => Promise<string[]>): Promise<WebhookUrlCheck> {
  return checkOutboundUrl(url, { allowPrivate, httpsOnly: !allowPrivate, refuseCredentials: true }, resolve);
}

/** The `code` of the error a connection refused by guardedLookup fails with. */
export const WEBHOOK_BLOCKED_CODE = 'EWEBHOOKBLOCKED';

/** The outbound guard as the socket's lookup, failing with EWEBHOOKBLOCKED. */
export function guardedLookup(allowPrivate: boolean, base?: typeof dns.lookup): LookupFunction {
  return outboundLookup(allowPrivate, base, {
    code: WEBHOOK_BLOCKED_CODE,
    refusal: (hostname) => `webhook delivery to ${hostname} refused: it resolves to a private, loopback, link-local or reserved address`,
    noAddress: (hostname) => `webhook host ${hostname} has no address`,
  });
}
