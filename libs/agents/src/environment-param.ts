import type { SandboxLimitValues } from '#libs/config';
import type { EnvironmentFile, EnvironmentLimits, EnvironmentNetwork, NetworkAccess } from '#libs/environments';
import type { FieldError } from '#libs/errors';

/**
 * The upstream `environment` param (session create, and a saved agent's default) read into what
 * this deployment stores. Pure: every problem is collected with its field; the caller decides the
 * error (422 naming each field) and checks what needs the database (the files' ids).
 */

/** The bounds of one environment param. */
export const ENVIRONMENT_BOUNDS = {
  envCount: 64,
  envNameChars: 128,
  envValueChars: 8192,
  envTotalChars: 65_536,
  domainCount: 100,
  fileCount: 20,
  pathChars: 1024,
  setupCommandCount: 20,
  setupCommandChars: 8192,
} as const;

/** Fields of the upstream param this deployment has no feature for: refused by name (null is accepted as "not asked for"). */
export const UNSUPPORTED_ENVIRONMENT_FIELDS: readonly string[] = ['desktop', 'skills', 'plugins', 'packages', 'container_size', 'environment_template_id', 'environment_id', 'capability_directories'];
const SUPPORTED_FIELDS = new Set(['type', 'network', 'env', 'files', 'setup_commands', 'limits']);
const NETWORK_FIELDS = new Set(['access', 'allowed_domains', 'blocked_domains']);
const ACCESSES: readonly NetworkAccess[] = ['disabled', 'restricted', 'enabled'];
/** `limits` keys and the settings their ceilings come from. */
export const LIMIT_KEYS: readonly [keyof EnvironmentLimits, keyof SandboxLimitValues][] = [
  ['timeout_s', 'timeoutS'],
  ['cpu_s', 'cpuS'],
  ['memory_mb', 'memoryMb'],
  ['processes', 'processes'],
  ['disk_mb', 'diskMb'],
];
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const DOMAIN_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const FILE_ID = /^[0-9a-f]{32}$/;
const WORKSPACE_PREFIX = '/workspace/';

/** A hosted environment as asked for: `network` absent means "not said" (the agent's, else disabled); `limits` holds only what was asked. */
export interface HostedEnvironmentParam {
  type: 'openai_hosted';
  network?: EnvironmentNetwork;
  env: Record<string, string>;
  files: EnvironmentFile[];
  setup_commands: string[];
  limits: EnvironmentLimits;
}

export type EnvironmentParam = { type: 'none' } | HostedEnvironmentParam;

export interface ParsedEnvironment {
  /** null when there are errors, or when the type is not offered (`unavailable`). */
  param: EnvironmentParam | null;
  errors: FieldError[];
  /** Set when the param asks for an environment this deployment does not host (`self_hosted`): 422 environment_unavailable. */
  unavailable?: string;
}

export interface ParseOptions {
  /** The deployment's ceilings (SANDBOX_*_MAX): a limit above one is refused. */
  ceilings: SandboxLimitValues;
  /** false on a saved agent's default: files belong to a caller, so only a session names them. */
  allowFiles: boolean;
}

/** Reads `raw` (the value of `field`, e.g. `environment`). */
export function parseEnvironmentParam(raw: unknown, field: string, options: ParseOptions): ParsedEnvironment {
  const errors: FieldError[] = [];
  const fail = (name: string, error: string): void => void errors.push({ field: `${field}.${name}`, errors: [error] });
  if (!isObject(raw)) return { param: null, errors: [{ field, errors: ['must be an object with a `type`'] }] };
  if (raw.type === 'none') {
    for (const key of Object.keys(raw)) if (key !== 'type') fail(key, 'is not a field of an environment of type none');
    return errors.length > 0 ? { param: null, errors } : { param: { type: 'none' }, errors };
  }
  if (raw.type === 'self_hosted') return { param: null, errors, unavailable: 'This deployment hosts environments itself: `self_hosted` environments are not offered (use `openai_hosted`)' };
  if (raw.type !== 'openai_hosted') return { param: null, errors: [{ field: `${field}.type`, errors: ['must be none or openai_hosted'] }] };

  for (const [key, value] of Object.entries(raw)) {
    if (UNSUPPORTED_ENVIRONMENT_FIELDS.includes(key)) {
      if (value !== null) fail(key, 'is not supported by this deployment');
    } else if (!SUPPORTED_FIELDS.has(key)) fail(key, 'is an unknown field');
  }
  const param: HostedEnvironmentParam = {
    type: 'openai_hosted',
    env: parseEnv(raw.env, fail),
    files: parseFiles(raw.files, fail, options.allowFiles),
    setup_commands: parseSetupCommands(raw.setup_commands, fail),
    limits: parseLimits(raw.limits, fail, options.ceilings),
  };
  const network = parseNetwork(raw.network, fail);
  if (network) param.network = network;
  return errors.length > 0 ? { param: null, errors } : { param, errors };
}

type Fail = (name: string, error: string) => void;

function parseNetwork(raw: unknown, fail: Fail): EnvironmentNetwork | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isObject(raw)) return void fail('network', 'must be an object with an `access`');
  for (const key of Object.keys(raw)) if (!NETWORK_FIELDS.has(key)) fail(`network.${key}`, 'is an unknown field');
  const access = raw.access as NetworkAccess;
  if (!ACCESSES.includes(access)) return void fail('network.access', `must be one of ${ACCESSES.join(', ')}`);
  const network: EnvironmentNetwork = { access };
  for (const list of ['allowed_domains', 'blocked_domains'] as const) {
    const domains = parseDomains(raw[list], `network.${list}`, fail);
    if (domains.length === 0) continue;
    if (access !== 'restricted') fail(`network.${list}`, 'is only for access restricted');
    else network[list] = domains;
  }
  const given = (list: unknown): boolean => Array.isArray(list) && list.length > 0;
  if (access === 'restricted' && !given(raw.allowed_domains) && !given(raw.blocked_domains)) fail('network', 'access restricted needs allowed_domains or blocked_domains');
  return network;
}

/** Domain names (a name covers its subdomains), lowercased and deduplicated; no wildcards, no addresses. */
function parseDomains(raw: unknown, name: string, fail: Fail): string[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw) || raw.length > ENVIRONMENT_BOUNDS.domainCount) return (fail(name, `must be a list of at most ${ENVIRONMENT_BOUNDS.domainCount} domain names`), []);
  const domains: string[] = [];
  for (const [index, value] of raw.entries()) {
    const domain = typeof value === 'string' ? value.toLowerCase().replace(/\.$/, '') : '';
    const labels = domain.split('.');
    const valid = domain.length > 0 && domain.length <= 253 && labels.length >= 2 && labels.every((label) => DOMAIN_LABEL.test(label)) && !/^[0-9]+$/.test(labels.at(-1)!);
    if (!valid) fail(`${name}[${index}]`, 'must be a domain name such as example.com (its subdomains are included; no wildcards, ports or addresses)');
    else if (!domains.includes(domain)) domains.push(domain);
  }
  return domains;
}

function parseEnv(raw: unknown, fail: Fail): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) return (fail('env', 'must be an object of variable names to string values'), {});
  const entries = Object.entries(raw);
  if (entries.length > ENVIRONMENT_BOUNDS.envCount) return (fail('env', `must hold at most ${ENVIRONMENT_BOUNDS.envCount} variables`), {});
  const kept: [string, string][] = [];
  let total = 0;
  for (const [name, value] of entries) {
    if (!ENV_NAME.test(name) || name.length > ENVIRONMENT_BOUNDS.envNameChars) fail(`env.${name}`, `is not a variable name (letters, digits and _, not starting with a digit, at most ${ENVIRONMENT_BOUNDS.envNameChars} characters)`);
    else if (typeof value !== 'string' || value.length > ENVIRONMENT_BOUNDS.envValueChars || value.includes('\0')) {
      fail(`env.${name}`, `must be a string of at most ${ENVIRONMENT_BOUNDS.envValueChars} characters, without NUL`);
    } else {
      kept.push([name, value]);
      total += name.length + value.length;
    }
  }
  if (total > ENVIRONMENT_BOUNDS.envTotalChars) fail('env', `must hold at most ${ENVIRONMENT_BOUNDS.envTotalChars} characters of names and values together`);
  // fromEntries defines each name as an own property (`__proto__` included), as assignment would not.
  return Object.fromEntries(kept);
}

function parseFiles(raw: unknown, fail: Fail, allowFiles: boolean): EnvironmentFile[] {
  if (raw === undefined || raw === null) return [];
  if (!allowFiles) return (fail('files', 'is not supported on an agent\'s default environment (files belong to a caller: pass them when creating the session)'), []);
  if (!Array.isArray(raw) || raw.length > ENVIRONMENT_BOUNDS.fileCount) return (fail('files', `must be a list of at most ${ENVIRONMENT_BOUNDS.fileCount} files`), []);
  const files: EnvironmentFile[] = [];
  for (const [index, file] of raw.entries()) {
    const name = `files[${index}]`;
    if (!isObject(file) || file.type !== 'file_id') {
      fail(`${name}.type`, 'must be file_id (an uploaded file, POST /files)');
      continue;
    }
    for (const key of Object.keys(file)) if (!['type', 'file_id', 'path'].includes(key)) fail(`${name}.${key}`, 'is an unknown field');
    if (typeof file.file_id !== 'string' || !FILE_ID.test(file.file_id)) fail(`${name}.file_id`, 'must be a file id (32 lowercase hexadecimal characters)');
    const path = workspacePath(file.path);
    if (typeof path !== 'string') fail(`${name}.path`, path.error);
    else if (files.some((other) => other.path === path)) fail(`${name}.path`, 'names the same path as another file');
    else if (typeof file.file_id === 'string') files.push({ type: 'file_id', file_id: file.file_id, path });
  }
  return files;
}

/**
 * A path in the workspace, relative to it: `a/b.txt` or `/workspace/a/b.txt`. Never `..`, an empty
 * or `.` segment, a control character, or `attachments/` (the session's attachments are placed there).
 */
export function workspacePath(raw: unknown): string | { error: string } {
  const invalid = { error: `must be a path in the workspace (relative to /workspace, or absolute under it), at most ${ENVIRONMENT_BOUNDS.pathChars} characters, without .. or empty segments` };
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > ENVIRONMENT_BOUNDS.pathChars || [...raw].some((char) => char.charCodeAt(0) < 0x20 || char === '\u007f')) return invalid;
  const relative = raw.startsWith(WORKSPACE_PREFIX) ? raw.slice(WORKSPACE_PREFIX.length) : raw;
  if (relative.startsWith('/')) return invalid;
  const segments = relative.split('/');
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..' || Buffer.byteLength(segment) > 255)) return invalid;
  if (segments[0] === 'attachments') return { error: 'must not be under attachments/ (the session\'s attachments are placed there)' };
  return relative;
}

/** Each a command string, or the upstream `{command, cwd?}` (cwd in the workspace: the command then starts with a cd there). */
function parseSetupCommands(raw: unknown, fail: Fail): string[] {
  if (raw === undefined || raw === null) return [];
  const { setupCommandCount: count, setupCommandChars: chars } = ENVIRONMENT_BOUNDS;
  if (!Array.isArray(raw) || raw.length > count) return (fail('setup_commands', `must be a list of at most ${count} commands`), []);
  const commands: string[] = [];
  for (const [index, entry] of raw.entries()) {
    const name = `setup_commands[${index}]`;
    const spec = typeof entry === 'string' ? { command: entry } : entry;
    if (!isObject(spec) || typeof spec.command !== 'string' || spec.command.trim() === '' || spec.command.length > chars || spec.command.includes('\0')) {
      fail(name, `must be a non-empty command of at most ${chars} characters, or {command, cwd?}`);
      continue;
    }
    for (const key of Object.keys(spec)) if (key !== 'command' && key !== 'cwd') fail(`${name}.${key}`, 'is an unknown field');
    if (spec.cwd === undefined || spec.cwd === null || spec.cwd === '/workspace') {
      commands.push(spec.command);
      continue;
    }
    const cwd = workspacePath(spec.cwd);
    if (typeof cwd !== 'string') fail(`${name}.cwd`, cwd.error);
    else commands.push(`cd '${cwd.replaceAll("'", "'\\''")}' && ${spec.command}`);
  }
  return commands;
}

function parseLimits(raw: unknown, fail: Fail, ceilings: SandboxLimitValues): EnvironmentLimits {
  const limits: EnvironmentLimits = {};
  if (raw === undefined || raw === null) return limits;
  if (!isObject(raw)) return (fail('limits', 'must be an object'), limits);
  for (const [key, value] of Object.entries(raw)) {
    const setting = LIMIT_KEYS.find(([name]) => name === key)?.[1];
    if (!setting) fail(`limits.${key}`, `is an unknown field (limits are ${LIMIT_KEYS.map(([name]) => name).join(', ')})`);
    else if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > ceilings[setting]) {
      fail(`limits.${key}`, `must be an integer from 1 to this deployment's ceiling, ${ceilings[setting]}`);
    } else limits[key as keyof EnvironmentLimits] = value as number;
  }
  return limits;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
