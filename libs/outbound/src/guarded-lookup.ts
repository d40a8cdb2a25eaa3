import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isPublicAddress } from './address-policy.js';

/** The `code` of the error a connection refused by guardedLookup fails with (unless the caller names its own). */
export const OUTBOUND_BLOCKED_CODE = 'EOUTBOUNDBLOCKED';

export interface GuardedLookupOptions {
  /** The error's `code` (webhooks keep their own, EWEBHOOKBLOCKED). */
  code?: string;
  /** The refusal's message, given the host name. */
  refusal?: (hostname: string) => string;
  /** The message of a host without any address. */
  noAddress?: (hostname: string) => string;
}

/**
 * A `lookup` for http.request / net.connect that refuses, with an error whose `code` is
 * EOUTBOUNDBLOCKED (or `options.code`), a host any of whose addresses is not public (unless
 * `allowPrivate`). It always resolves every address and then answers in the form node asked for
 * (`options.all` or not), so one public record cannot cover for a private one. Being the socket's
 * own lookup, what is checked is what is connected to: a name that answered a public address when
 * it was saved and a private one now (DNS rebinding) is refused here. `base` is dns.lookup,
 * replaceable in tests.
 */
export function guardedLookup(allowPrivate: boolean, base: typeof dns.lookup = dns.lookup, options: GuardedLookupOptions = {}): LookupFunction {
  const code = options.code ?? OUTBOUND_BLOCKED_CODE;
  const refusal = options.refusal ?? ((hostname: string) => `the address of ${hostname} is not allowed: it resolves to a private, loopback, link-local or reserved address`);
  const noAddress = options.noAddress ?? ((hostname: string) => `the host ${hostname} has no address`);
  return (hostname, lookupOptions, callback) => {
    base(hostname, { ...lookupOptions, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (addresses.length === 0) return callback(Object.assign(new Error(noAddress(hostname)), { code: 'ENOTFOUND', hostname }), []);
      if (!allowPrivate && !addresses.every((entry) => isPublicAddress(entry.address))) {
        return callback(Object.assign(new Error(refusal(hostname)), { code, hostname }), []);
      }
      if (lookupOptions.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
