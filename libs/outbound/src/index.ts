// The deployment's outbound address policy (SSRF guard), for every request to an address a caller
// chose: which addresses are public, URL checks at save, the connect-time lookup, and a guarded fetch.
export { checkOutboundUrl, hostOf, isAllowedHost, isPublicAddress, NOT_PUBLIC, parseAllowedHosts } from './address-policy.js';
export type { OutboundUrlCheck, OutboundUrlRules } from './address-policy.js';
export { createGuardedFetch, type FetchFunction, type GuardedFetchOptions, isOutboundBlocked, OutboundBlockedError, ResponseTooLargeError } from './guarded-fetch.js';
export { guardedLookup, type GuardedLookupOptions, OUTBOUND_BLOCKED_CODE } from './guarded-lookup.js';
