import type { SandboxLimitValues } from '#libs/config';
import type { EnvironmentConfig, EnvironmentLimits, EnvironmentNetwork } from '#libs/environments';
import type { FieldError } from '#libs/errors';
import { REDACTED_SECRET } from '#libs/tools';
import { parseEnvironmentParam } from './environment-param.js';

/** No ceiling: a definition read where the deployment's are not at hand (a stored version, a test). */
export const UNBOUNDED: SandboxLimitValues = { timeoutS: Infinity, cpuS: Infinity, memoryMb: Infinity, processes: Infinity, diskMb: Infinity };

/**
 * An agent's default environment: the session param's shape without `files` (files belong to a
 * caller), network disabled unless it says otherwise, only the limits it sets. Absent, null or
 * `{type: "none"}`: none.
 */
export function parseAgentEnvironment(raw: unknown, ceilings: SandboxLimitValues, errors: FieldError[]): EnvironmentConfig | null {
  if (raw === undefined || raw === null) return null;
  const parsed = parseEnvironmentParam(raw, 'environment', { ceilings, allowFiles: false });
  if (parsed.unavailable) errors.push({ field: 'environment.type', errors: ['must be none or openai_hosted (self_hosted environments are not offered)'] });
  errors.push(...parsed.errors);
  // A definition read back from the resource and sent again: its values were shown redacted.
  const env = (raw as { env?: unknown }).env;
  for (const [name, value] of Object.entries(env && typeof env === 'object' ? env : {})) {
    if (value === REDACTED_SECRET) errors.push({ field: `environment.env.${name}`, errors: [`${REDACTED_SECRET} is how a saved value is shown, not its value: type the value again`] });
  }
  if (parsed.param?.type !== 'openai_hosted' || errors.length > 0) return null;
  return { ...parsed.param, network: parsed.param.network ?? { access: 'disabled' } };
}

/** An agent's default environment as its resource shows it. */
export interface AgentEnvironmentView {
  type: 'openai_hosted';
  network: EnvironmentNetwork;
  /** Names with their values redacted: values are what a caller keeps secrets in. */
  env: Record<string, string>;
  /** Only to those who see the agent's instructions (its managers); else absent. */
  setup_commands?: string[];
  /** Only the limits the agent sets (the rest: the deployment's defaults). */
  limits: EnvironmentLimits;
}

export function agentEnvironmentView(environment: EnvironmentConfig | null, managed: boolean): AgentEnvironmentView | null {
  if (environment === null) return null;
  const view: AgentEnvironmentView = { type: 'openai_hosted', network: environment.network, env: redactedEnv(environment.env), limits: environment.limits };
  if (managed) view.setup_commands = environment.setup_commands;
  return view;
}

/** A stored definition's environment with its env values redacted (what a version shows). */
export function redactedEnvironment(environment: EnvironmentConfig | null | undefined): EnvironmentConfig | null {
  return environment ? { ...environment, env: redactedEnv(environment.env) } : null;
}

function redactedEnv(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(env).map((name) => [name, REDACTED_SECRET]));
}
