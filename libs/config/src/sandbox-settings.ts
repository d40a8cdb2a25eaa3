import { parseAllowedHosts } from '#libs/outbound';
import { int } from './env-values.js';

export const SANDBOX_RUNTIMES = ['bwrap', 'none'] as const;
export type SandboxRuntimeName = (typeof SANDBOX_RUNTIMES)[number];

/** What one command of a session's environment may use; a limit hit ends the command, never the worker. */
export interface SandboxLimitValues {
  /** Wall time of one command, seconds (the `shell` tool's `timeout_s` may ask for less, never more than the ceiling). */
  timeoutS: number;
  /** CPU time of one command, seconds (RLIMIT_CPU). */
  cpuS: number;
  /** Address space of each process, MiB (RLIMIT_AS). */
  memoryMb: number;
  /** Processes and threads at once (RLIMIT_NPROC, and a pid count). */
  processes: number;
  /** The workspace's size, MiB; also the largest single file (RLIMIT_FSIZE). */
  diskMb: number;
}

export interface SandboxSettings {
  /** `bwrap`: commands run in a bubblewrap sandbox; `none`: no environment is offered (422 environment_unavailable). */
  runtime: SandboxRuntimeName;
  /** Where the worker keeps sessions' workspace checkouts (a cache: the durable copy is in the file storage). */
  dir: string;
  /** The unprivileged user and group commands run as (outside the sandbox's user namespace too). */
  uid: number;
  gid: number;
  /** What a session gets unless it (or its agent) asks for less. */
  defaults: SandboxLimitValues;
  /** The most a session or an agent may ask for. */
  ceilings: SandboxLimitValues;
  /** The most of a command's output its item keeps (and the model reads), bytes; the rest is cut with a note. */
  outputMaxBytes: number;
  /** The most files a workspace may hold (each commit scans them all). */
  workspaceMaxFiles: number;
  /**
   * `host` or `host:port` entries (parseAllowedHosts) the sandboxes' egress proxy reaches even at a
   * private or loopback address: the only exception to the outbound address policy for commands.
   */
  egressAllowedHosts: string[];
}

/** SANDBOX_*: the environment's runtime and its limits' defaults and ceilings (a default above its ceiling stops the start). */
export function sandboxSettings(env: NodeJS.ProcessEnv): SandboxSettings {
  const runtime = env.SANDBOX_RUNTIME || 'bwrap';
  if (!(SANDBOX_RUNTIMES as readonly string[]).includes(runtime)) throw new Error(`SANDBOX_RUNTIME must be ${SANDBOX_RUNTIMES.join(' or ')}, got "${runtime}"`);
  // Each limit: its default (what a session gets unless it asks for less) and its ceiling.
  const limit = (name: string, value: number, max: number): [number, number] => {
    if (value < 1 || max < 1) throw new Error(`${name} and ${name}_MAX must be positive`);
    if (value > max) throw new Error(`${name} (${value}) is above its ceiling ${name}_MAX (${max})`);
    return [value, max];
  };
  const [timeoutS, timeoutMax] = limit('SANDBOX_TIMEOUT_S', int(env, 'SANDBOX_TIMEOUT_S', 120), int(env, 'SANDBOX_TIMEOUT_S_MAX', 1800));
  const [cpuS, cpuMax] = limit('SANDBOX_CPU_S', int(env, 'SANDBOX_CPU_S', 300), int(env, 'SANDBOX_CPU_S_MAX', 3600));
  const [memoryMb, memoryMax] = limit('SANDBOX_MEMORY_MB', int(env, 'SANDBOX_MEMORY_MB', 2048), int(env, 'SANDBOX_MEMORY_MB_MAX', 8192));
  const [processes, processesMax] = limit('SANDBOX_PROCESSES', int(env, 'SANDBOX_PROCESSES', 256), int(env, 'SANDBOX_PROCESSES_MAX', 2048));
  const [diskMb, diskMax] = limit('SANDBOX_DISK_MB', int(env, 'SANDBOX_DISK_MB', 1024), int(env, 'SANDBOX_DISK_MB_MAX', 10_240));
  return {
    runtime: runtime as SandboxRuntimeName,
    dir: env.SANDBOX_DIR || '.data/sandbox',
    uid: int(env, 'SANDBOX_UID', 65534),
    gid: int(env, 'SANDBOX_GID', 65534),
    defaults: { timeoutS, cpuS, memoryMb, processes, diskMb },
    ceilings: { timeoutS: timeoutMax, cpuS: cpuMax, memoryMb: memoryMax, processes: processesMax, diskMb: diskMax },
    outputMaxBytes: Math.max(1024, int(env, 'SANDBOX_OUTPUT_MAX_BYTES', 64 * 1024)),
    workspaceMaxFiles: Math.max(1, int(env, 'SANDBOX_WORKSPACE_MAX_FILES', 10_000)),
    egressAllowedHosts: egressAllowedHosts(env.SANDBOX_EGRESS_ALLOWED_HOSTS ?? ''),
  };
}

function egressAllowedHosts(text: string): string[] {
  try {
    return parseAllowedHosts(text);
  } catch (error) {
    throw new Error(`SANDBOX_EGRESS_ALLOWED_HOSTS: ${(error as Error).message}`, { cause: error });
  }
}
