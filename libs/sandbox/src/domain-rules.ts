import { isIP } from 'node:net';
import type { CommandNetwork } from './command-sandbox.js';

/** A host name as compared: lowercased, without a trailing dot. */
function normalise(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

/** Whether `host` is `domain` or one of its subdomains (`*.example.com` is written as `example.com` too). */
export function matchesDomain(host: string, domain: string): boolean {
  const name = normalise(host);
  const entry = normalise(domain.trim()).replace(/^\*\./, '');
  if (entry === '') return false;
  return name === entry || name.endsWith(`.${entry}`);
}

/**
 * Why a command's network refuses `host` by its lists, or null when they let it through:
 * `restricted` refuses an IP address, a blocked domain, and, when it has allowed domains, any
 * other; `enabled` has no lists. The deployment's address policy is applied after this, whatever the lists say.
 */
export function domainRefusal(network: CommandNetwork, host: string): string | null {
  if (network.access === 'disabled') return 'the network is disabled';
  if (network.access === 'enabled') return null;
  // An address would pass a list of blocked domains whatever name it serves: `restricted` reaches an
  // address only where the allowed list names that very address (the API's lists take names only).
  if (isIP(host) !== 0) {
    return network.allowedDomains.some((entry) => normalise(entry.trim()) === normalise(host)) ? null : `${host} is an IP address: a restricted network reaches hosts by domain name only`;
  }
  const blocked = network.blockedDomains.find((domain) => matchesDomain(host, domain));
  if (blocked !== undefined) return `${host} is a blocked domain (${normalise(blocked)})`;
  if (network.allowedDomains.length > 0 && !network.allowedDomains.some((domain) => matchesDomain(host, domain))) return `${host} is not in the allowed domains`;
  return null;
}
