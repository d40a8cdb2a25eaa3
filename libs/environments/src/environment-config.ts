/**
 * A session's environment as stored with the session (and as a saved agent's default): the
 * upstream `environment` param of type `openai_hosted` (a workspace hosted by this deployment),
 * normalised. A session without an environment stores null.
 */
export type NetworkAccess = 'disabled' | 'enabled' | 'restricted';

export interface EnvironmentNetwork {
  /** `disabled` (the default): no network at all; `restricted`: only through the egress proxy, to allowed (and not blocked) domains; `enabled`: any public address through the proxy. */
  access: NetworkAccess;
  /** `restricted`: the domains (and their subdomains) commands may reach. */
  allowed_domains?: string[];
  /** Domains never reached, whatever else allows them. */
  blocked_domains?: string[];
}

/** Limits a session or an agent asks for: each at most the deployment's ceiling; absent: the deployment's default. */
export interface EnvironmentLimits {
  timeout_s?: number;
  cpu_s?: number;
  memory_mb?: number;
  processes?: number;
  disk_mb?: number;
}

/** A file of the caller's placed in the workspace when it is first made (`path` relative to the workspace). */
export interface EnvironmentFile {
  type: 'file_id';
  file_id: string;
  path: string;
}

export interface EnvironmentConfig {
  type: 'openai_hosted';
  network: EnvironmentNetwork;
  /** Set for every command (nothing of the worker's own environment reaches a command). */
  env: Record<string, string>;
  files: EnvironmentFile[];
  /** Run once, in order, when the workspace is first made. */
  setup_commands: string[];
  limits: EnvironmentLimits;
}

/** The directory the workspace is seen at inside the sandbox; tools' paths are relative to it. */
export const WORKSPACE_PATH = '/workspace';
