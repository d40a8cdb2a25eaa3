import { type EnvironmentConfig, type EnvironmentLimits, type NetworkAccess, WORKSPACE_PATH } from '#libs/environments';

/** The session resource's `environment` when the session has one (the upstream hosted resource's shape, plus this deployment's fields). */
export interface HostedEnvironmentView {
  type: 'openai_hosted';
  /** The workspace's id: the session's workdir (its tree and its project share it). */
  id: string;
  network: { access: NetworkAccess; allowed_domains: string[]; blocked_domains: string[] };
  /** The names of the variables set for its commands; values are never shown (they may be secrets). */
  env_names: string[];
  files: { type: 'file_id'; id: string; file_id: string; path: string }[];
  /** How many setup commands run when the workspace is first made; their bodies are never shown (upstream: confidential). */
  setup_command_count: number;
  /** The effective limits of each command (the deployment's defaults filled in when the session was created). */
  limits: Required<EnvironmentLimits>;
  // Upstream fields this deployment has nothing for: always empty.
  capability_directories: string[];
  packages: { npm: string[]; python: string[]; system: string[] };
  plugins: never[];
  skills: never[];
}

export type EnvironmentView = { type: 'none' } | HostedEnvironmentView;

/**
 * What the session resource shows of its stored environment. Env values and setup command bodies
 * stay out (they are what a caller keeps secrets in, and the upstream resource never returns them
 * either); file paths are absolute inside the environment, as upstream shows them.
 */
export function environmentView(environment: EnvironmentConfig | null, workdirId: string): EnvironmentView {
  if (environment === null) return { type: 'none' };
  return {
    type: 'openai_hosted',
    id: workdirId,
    network: {
      access: environment.network.access,
      allowed_domains: environment.network.allowed_domains ?? [],
      blocked_domains: environment.network.blocked_domains ?? [],
    },
    env_names: Object.keys(environment.env).sort(),
    files: environment.files.map((file) => ({ type: 'file_id', id: file.file_id, file_id: file.file_id, path: `${WORKSPACE_PATH}/${file.path}` })),
    setup_command_count: environment.setup_commands.length,
    // Stored effective (the deployment's defaults filled in at creation), so shown as stored.
    limits: { ...(environment.limits as Required<EnvironmentLimits>) },
    capability_directories: [],
    packages: { npm: [], python: [], system: [] },
    plugins: [],
    skills: [],
  };
}
