// Parsers of one environment value each: a value they cannot read stops the process at start,
// with the variable's name (a typo must not silently mean the default).

export interface RedisNode {
  host: string;
  port: number;
}

/** `host:port` entries separated by commas (`[v6 address]:port` for IPv6); a typo stops the process at start. */
export function parseRedisNodes(raw: string): RedisNode[] {
  const nodes = raw.split(',').map((entry) => {
    const text = entry.trim();
    const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
    const port = Number(match?.[3]);
    const host = match?.[1] ?? match?.[2];
    if (!match || host === undefined || !Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new Error(`REDIS_CLUSTER_NODES must be host:port entries separated by commas, got "${text}"`);
    }
    return { host, port };
  });
  return nodes;
}

/** `provider:model` or `provider:*` entries separated by commas; empty: no allowlist. A typo stops the process at start. */
export function modelAllowlist(raw: string | undefined): string[] | null {
  const entries = (raw ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (entries.length === 0) return null;
  for (const entry of entries) {
    if (!/^[a-z][a-z0-9_-]*:(\*|\S{1,160})$/.test(entry)) throw new Error(`MODEL_ALLOWLIST must be provider:model or provider:* entries separated by commas, got "${entry}"`);
  }
  return entries;
}

/**
 * TRUST_PROXY: unset or 0, no proxy is trusted; a number, that many hops; otherwise a comma list of
 * addresses, CIDR subnets or Express's names (`loopback`, `linklocal`, `uniquelocal`). `true` is
 * refused: trusting every hop lets any client choose the address it is throttled under.
 */
export function parseTrustProxy(raw: string | undefined): false | number | string[] {
  const value = raw?.trim() ?? '';
  if (value === '' || value === '0' || value === 'false') return false;
  if (/^\d+$/.test(value)) return Number(value);
  if (value === 'true') throw new Error('TRUST_PROXY=true would trust any client\'s X-Forwarded-For: give the number of proxies in front of the api, or their addresses');
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  const named = new Set(['loopback', 'linklocal', 'uniquelocal']);
  for (const entry of entries) {
    if (!named.has(entry) && !/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(entry)) throw new Error(`TRUST_PROXY: "${entry}" is not an address, a subnet, loopback, linklocal or uniquelocal`);
  }
  return entries;
}

export function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

/** One of a closed set of words; anything else stops the process at start (a typo must not silently mean the default). */
export function oneOf<const T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be ${values.join(' or ')}, got "${raw}"`);
  return raw as T;
}

export function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`${name} is required (npm start sets it for the embedded stack)`);
  return value;
}

export function positiveNumber(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

export function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}
