// Which addresses the deployment may send requests to on a caller's behalf (SSRF guard), for every
// outbound request to an address a caller chose: webhooks, MCP servers, their OAuth endpoints. A URL
// is checked when it is saved, and every connection checks again what its host resolves to at
// connect time (guarded-lookup.ts), because DNS may answer differently between the two (rebinding).
import { isIP } from 'node:net';

/** IPv4 ranges that are not the public internet (IANA special-purpose registry, RFC 6890 and later). */
const NON_PUBLIC_V4: [base: string, prefixLength: number][] = [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host on most systems
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (Alibaba's metadata, 100.100.100.200, too)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and broadcast 255.255.255.255
];

/** A dotted-quad IPv4 address as an unsigned 32-bit number, or null. */
function v4ToNumber(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) return null;
  return parts.reduce((value, part) => value * 256 + Number(part), 0);
}

const NON_PUBLIC_V4_NUMBERS = NON_PUBLIC_V4.map(([base, length]) => [v4ToNumber(base) ?? 0, length] as const);

function isPublicV4(value: number): boolean {
  // Compares prefixes by division, not by bit operators, which would make the numbers signed.
  return !NON_PUBLIC_V4_NUMBERS.some(([base, length]) => Math.floor(value / 2 ** (32 - length)) === Math.floor(base / 2 ** (32 - length)));
}

/** An IPv6 address as its eight 16-bit groups, or null; accepts `::` and a trailing dotted IPv4. */
function v6Groups(text: string): number[] | null {
  let hexText = text;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    // "::ffff:1.2.3.4" is "::ffff:102:304": the dotted tail is the last two groups.
    const v4 = v4ToNumber(text.slice(lastColon + 1));
    if (v4 === null) return null;
    hexText = `${text.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const halves = hexText.split('::');
  if (halves.length > 2) return null;
  const groupsOf = (half: string) => (half === '' ? [] : half.split(':').map((part) => (/^[0-9a-f]{1,4}$/i.test(part) ? parseInt(part, 16) : NaN)));
  const left = groupsOf(halves[0]);
  const right = halves.length === 2 ? groupsOf(halves[1]) : [];
  const missing = 8 - left.length - right.length;
  // Without "::" all eight groups are written; with it, it stands for at least one.
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...left, ...new Array<number>(missing).fill(0), ...right];
  return groups.some(Number.isNaN) ? null : groups;
}

/** The IPv4 address carried in two 16-bit groups. */
const embeddedV4 = (high: number, low: number) => high * 65536 + low;

function isPublicV6(g: number[]): boolean {
  const zeroUpTo = (n: number) => g.slice(0, n).every((group) => group === 0);
  // ::ffff:a.b.c.d (IPv4-mapped) and ::ffff:0:a.b.c.d (IPv4-translated): the IPv4 address is what is reached.
  if (zeroUpTo(5) && g[5] === 0xffff) return isPublicV4(embeddedV4(g[6], g[7]));
  if (zeroUpTo(4) && g[4] === 0xffff && g[5] === 0) return isPublicV4(embeddedV4(g[6], g[7]));
  // 64:ff9b::/96, the well-known NAT64 prefix: a gateway forwards to the embedded IPv4 address.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((group) => group === 0)) return isPublicV4(embeddedV4(g[6], g[7]));
  // 2002::/16, 6to4: the tunnel ends at the IPv4 address in bits 16 to 48.
  if (g[0] === 0x2002) return isPublicV4(embeddedV4(g[1], g[2]));
  // Everything else outside global unicast 2000::/3 is not the internet: ::, ::1, the deprecated
  // IPv4-compatible ::/96, ULA fc00::/7 (and so fd00:ec2::254, AWS metadata), link-local fe80::/10,
  // site-local fec0::/10, multicast ff00::/8, local-use NAT64 64:ff9b:1::/48, discard 100::/64,
  // SRv6 SIDs 5f00::/16.
  if ((g[0] & 0xe000) !== 0x2000) return false;
  // Inside 2000::/3: IETF assignments 2001::/23 (Teredo 2001::/32 among them, whose embedded
  // address is obfuscated), documentation 2001:db8::/32 and 3fff::/20.
  if (g[0] === 0x2001 && g[1] < 0x0200) return false;
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false;
  if (g[0] === 0x3fff && g[1] < 0x1000) return false;
  return true;
}

/**
 * Whether an address (IPv4 or IPv6, as text) is on the public internet: not private, loopback,
 * link-local, unspecified, CGNAT, multicast, reserved, documentation or cloud metadata, whether
 * written plainly or embedded in IPv6 (mapped, NAT64, 6to4). Anything not an IP address is not.
 */
export function isPublicAddress(ip: string): boolean {
  // A zone (fe80::1%eth0) only ever scopes a non-global address.
  if (ip.includes('%')) return false;
  switch (isIP(ip)) {
    case 4: {
      const value = v4ToNumber(ip);
      return value !== null && isPublicV4(value);
    }
    case 6: {
      const groups = v6Groups(ip);
      return groups !== null && isPublicV6(groups);
    }
    default:
      return false;
  }
}

export type OutboundUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export const NOT_PUBLIC = 'is a private, loopback, link-local or reserved address';

/** What a URL check allows: `allowPrivate` skips the address rules (and so DNS); `httpsOnly` refuses plain http. */
export interface OutboundUrlRules {
  allowPrivate: boolean;
  httpsOnly: boolean;
  /** Userinfo in the URL refused (it would be sent to, and logged by, whoever receives it). */
  refuseCredentials?: boolean;
}

/**
 * The host of a URL as an address would be written: IPv6 without its brackets. URL has already
 * normalised the odd IPv4 spellings (0x7f.1, 2130706433, 0177.0.0.1, 127.1) to dotted quads.
 */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Whether a URL may be requested: absolute http(s) (https only when `httpsOnly`), and a host that
 * is, or resolves only to, public addresses unless `allowPrivate`. `resolve` gives every address of
 * a host name (A and AAAA); null skips DNS (only a literal address is judged: names are checked at
 * connect time).
 */
export async function checkOutboundUrl(url: string, rules: OutboundUrlRules, resolve: ((host: string) => Promise<string[]>) | null): Promise<OutboundUrlCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'the URL is not a valid absolute URL' };
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && !rules.httpsOnly)) {
    return { ok: false, reason: rules.httpsOnly ? 'the URL must use https' : 'the URL must use http or https' };
  }
  if (rules.refuseCredentials && (parsed.username !== '' || parsed.password !== '')) return { ok: false, reason: 'credentials in the URL are not allowed' };
  if (rules.allowPrivate) return { ok: true, url: parsed };
  const host = hostOf(parsed);
  if (isIP(host) !== 0) return isPublicAddress(host) ? { ok: true, url: parsed } : { ok: false, reason: `the host ${NOT_PUBLIC}` };
  if (resolve === null) return { ok: true, url: parsed };
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    return { ok: false, reason: `the host ${host} cannot be resolved` };
  }
  if (addresses.length === 0) return { ok: false, reason: `the host ${host} cannot be resolved` };
  // All of them, not the first: a client may connect to any. Which one is not said, so that the
  // answer does not map the internal network for whoever saves URLs.
  if (!addresses.every(isPublicAddress)) return { ok: false, reason: `the host ${host} resolves to an address that ${NOT_PUBLIC}` };
  return { ok: true, url: parsed };
}

/**
 * An allowlist of `host` or `host:port` entries (comma-separated, as MCP_ALLOWED_HOSTS is written;
 * IPv6 in brackets, `[fd00::1]:8080`), lowercased. An entry without a port allows every port.
 * Throws on an entry that is not a host: a typo must not fail open or silently allow nothing.
 */
export function parseAllowedHosts(text: string): string[] {
  const entries = text.split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== '');
  return entries.map((entry) => {
    let url: URL | null = null;
    try {
      if (!/[/?#@\\\s]/.test(entry)) url = new URL(`http://${entry}`);
    } catch {
      url = null;
    }
    if (!url || url.hostname === '') throw new Error(`not a host or host:port: ${entry}`);
    // As URL writes it (IPv4 spellings, IDNs), so that matching compares like with like.
    return /:\d+$/.test(entry) ? `${url.hostname}:${url.port || '80'}` : url.hostname;
  });
}

/** Whether `url`'s host (any port) or host:port (its port, or the scheme's default) is in `allowed` (parseAllowedHosts' entries). */
export function isAllowedHost(url: URL, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return false;
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allowed.includes(url.hostname) || allowed.includes(`${url.hostname}:${port}`);
}
