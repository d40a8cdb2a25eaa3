import type { SandboxLimitValues } from '#libs/config';
import type { EnvironmentConfig, EnvironmentFile, EnvironmentLimits, EnvironmentNetwork, NetworkAccess } from '#libs/environments';
import type { FieldError } from '#libs/errors';
import { type EnvironmentParam, type HostedEnvironmentParam, LIMIT_KEYS } from './environment-param.js';

/**
 * The environment a new session gets, from its agent's default and its own param:
 * - param omitted: the agent's default (none when the agent has none);
 * - `{type: "none"}`: no environment, whatever the agent's (none is the tightest there is);
 * - `openai_hosted`: the param over the agent's default, which it may only tighten:
 *   network access disabled < restricted < enabled (a session may go lower; restricted stays
 *   restricted only with allowed domains each within the agent's, when the agent lists any, and
 *   every domain the agent blocks still blocked); each limit at most the agent's; `env` is the
 *   agent's with the session's added (a name in both: the session's value); `files` the session's
 *   (an agent's default has none); `setup_commands` the agent's, then the session's.
 * A limit neither sets is the deployment's default; every limit is then capped at the current
 * ceiling (an agent saved under a higher one gets no more than the deployment allows today).
 * Pure: `loosened` names each field that asks for more than the agent allows.
 */
export function resolveEnvironment(
  agentDefault: EnvironmentConfig | null,
  param: EnvironmentParam | undefined,
  deployment: { defaults: SandboxLimitValues; ceilings: SandboxLimitValues },
): { environment: EnvironmentConfig | null; loosened: FieldError[] } {
  const loosened: FieldError[] = [];
  if (param?.type === 'none') return { environment: null, loosened };
  const asked: HostedEnvironmentParam | null = param ?? agentDefault;
  if (asked === null) return { environment: null, loosened };
  const base = param && agentDefault ? agentDefault : null;
  const network = asked.network ?? base?.network ?? { access: 'disabled' };
  if (base) {
    for (const problem of networkLoosening(base.network, network)) loosened.push({ field: `environment.network${problem.field}`, errors: [problem.error] });
    for (const [key] of LIMIT_KEYS) {
      const mine = asked.limits[key];
      const theirs = base.limits[key];
      if (mine !== undefined && theirs !== undefined && mine > theirs) loosened.push({ field: `environment.limits.${key}`, errors: [`must be at most the agent's ${theirs}`] });
    }
  }
  const limits: EnvironmentLimits = {};
  for (const [key, setting] of LIMIT_KEYS) {
    limits[key] = Math.min(asked.limits[key] ?? base?.limits[key] ?? deployment.defaults[setting], deployment.ceilings[setting]);
  }
  const environment: EnvironmentConfig = {
    type: 'openai_hosted',
    network: copyNetwork(network),
    env: { ...base?.env, ...asked.env },
    files: mergeFiles(base?.files ?? [], asked.files),
    setup_commands: [...(base?.setup_commands ?? []), ...asked.setup_commands],
    limits,
  };
  return { environment, loosened };
}

const OPENNESS: Record<NetworkAccess, number> = { disabled: 0, restricted: 1, enabled: 2 };

/** What of `session` reaches further than `agent` (field suffixes under `network`). */
export function networkLoosening(agent: EnvironmentNetwork, session: EnvironmentNetwork): { field: string; error: string }[] {
  if (OPENNESS[session.access] > OPENNESS[agent.access]) return [{ field: '.access', error: `must not open the agent's network access (${agent.access}) further: disabled < restricted < enabled` }];
  if (session.access !== 'restricted' || agent.access !== 'restricted') return [];
  const problems: { field: string; error: string }[] = [];
  const agentAllowed = agent.allowed_domains ?? [];
  const sessionAllowed = session.allowed_domains ?? [];
  if (agentAllowed.length > 0) {
    if (sessionAllowed.length === 0) problems.push({ field: '.allowed_domains', error: `must list domains within the agent's (${agentAllowed.join(', ')})` });
    for (const [index, domain] of sessionAllowed.entries()) {
      if (!covers(agentAllowed, domain)) problems.push({ field: `.allowed_domains[${index}]`, error: `is not within the agent's allowed domains (${agentAllowed.join(', ')})` });
    }
  }
  const sessionBlocked = session.blocked_domains ?? [];
  const unblocked = (agent.blocked_domains ?? []).filter((domain) => !covers(sessionBlocked, domain));
  if (unblocked.length > 0) problems.push({ field: '.blocked_domains', error: `must still block the agent's blocked domains (${unblocked.join(', ')})` });
  return problems;
}

/** Whether `domain` is one of `list` or a subdomain of one. */
function covers(list: string[], domain: string): boolean {
  return list.some((entry) => domain === entry || domain.endsWith(`.${entry}`));
}

function copyNetwork(network: EnvironmentNetwork): EnvironmentNetwork {
  const copy: EnvironmentNetwork = { access: network.access };
  if (network.allowed_domains?.length) copy.allowed_domains = [...network.allowed_domains];
  if (network.blocked_domains?.length) copy.blocked_domains = [...network.blocked_domains];
  return copy;
}

/** The agent's files, then the session's; a path in both: the session's file. */
function mergeFiles(agentFiles: EnvironmentFile[], sessionFiles: EnvironmentFile[]): EnvironmentFile[] {
  const paths = new Set(sessionFiles.map((file) => file.path));
  return [...agentFiles.filter((file) => !paths.has(file.path)), ...sessionFiles];
}
