import type { CommandLimits } from './command-sandbox.js';

/** Where the workspace is seen inside the sandbox (and the command's working directory). */
export const SANDBOX_WORKSPACE = '/workspace';
/** Where the egress proxy's unix socket is seen inside the sandbox (with network only). */
export const SANDBOX_PROXY_SOCKET = '/run/egress-proxy.sock';
/** The loopback port, inside the sandbox's own network namespace, that forwards to the egress proxy. */
export const SANDBOX_PROXY_PORT = 3128;
/** Open files per process: enough for builds and test runners, not enough to pin the worker's kernel memory. */
export const SANDBOX_OPEN_FILES = 1024;

/**
 * The only files of the host's /etc a command sees: what programs need to run (users and groups
 * by name, name resolution, TLS roots, the dynamic linker's cache, Debian's alternatives, the
 * shells' profiles, the time zone). Never /etc/shadow, ssh keys or anything else private.
 */
export const ETC_ENTRIES = [
  'passwd',
  'group',
  'hosts',
  'resolv.conf',
  'nsswitch.conf',
  'ssl/certs',
  'ca-certificates',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'bash.bashrc',
  'profile',
  'localtime',
] as const;

/** What the host has at /bin, /lib, /lib64 and /sbin: a symlink (merged /usr, Debian 12) or a directory. */
export type RootEntry = { name: string; symlink: string } | { name: string; directory: true };

export interface BwrapArgsInput {
  workspaceDir: string;
  limits: CommandLimits;
  /** The host's root entries besides /usr (see RootEntry). */
  rootEntries: RootEntry[];
  /** The egress proxy's unix socket on the host, or null: no network at all. */
  proxySocket: string | null;
  command: string;
  /** The command's whole environment (commandEnv): set inside the sandbox only, never bwrap's own. */
  env: Record<string, string>;
}

const MIB = 1024 * 1024;

/**
 * bubblewrap's arguments for one command: every namespace new (user, pid, ipc, uts, net, cgroup),
 * no capabilities, no nested user namespaces, the host's /usr and a few /etc files read-only,
 * fresh /proc and /dev, a private size-bounded /tmp and /dev/shm, and the workspace (the only writable host
 * directory) at /workspace. Inside, `sh` joins stderr to stdout (one interleaved stream), starts
 * the proxy forwarder when there is network, and runs the command under its limits.
 */
export function bwrapArgs(input: BwrapArgsInput): string[] {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--hostname', 'sandbox'];
  // The command's variables are set for the sandboxed process alone: bwrap itself runs on the host
  // with BWRAP_HOST_ENV, where a LD_PRELOAD or GCONV_PATH would load a session's file before any namespace exists.
  args.push('--clearenv');
  for (const [key, value] of Object.entries(input.env)) args.push('--setenv', key, value);
  args.push('--ro-bind', '/usr', '/usr');
  for (const entry of input.rootEntries) {
    if ('symlink' in entry) args.push('--symlink', entry.symlink, `/${entry.name}`);
    else args.push('--ro-bind', `/${entry.name}`, `/${entry.name}`);
  }
  for (const name of ETC_ENTRIES) args.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`);
  args.push('--proc', '/proc', '--dev', '/dev');
  // /tmp and /dev/shm live in memory: bounded, so that filling them cannot take the worker's memory.
  const tmpBytes = String(input.limits.fileSizeMb * MIB);
  args.push('--size', tmpBytes, '--tmpfs', '/tmp', '--size', tmpBytes, '--tmpfs', '/dev/shm');
  args.push('--bind', input.workspaceDir, SANDBOX_WORKSPACE, '--chdir', SANDBOX_WORKSPACE);
  if (input.proxySocket !== null) args.push('--dir', '/run', '--ro-bind', input.proxySocket, SANDBOX_PROXY_SOCKET);
  // The root and /dev are bwrap's own tmpfs (unbounded memory): read-only once everything is mounted.
  args.push('--remount-ro', '/dev', '--remount-ro', '/');
  args.push('--', ...limitArgs(input.limits), '--', '/bin/sh', '-c', innerScript(input.proxySocket !== null), 'sandbox', input.command);
  return args;
}

/**
 * prlimit's arguments, applied inside the sandbox, after its user namespace exists. That matters
 * for RLIMIT_NPROC: the kernel counts processes per user per user namespace (and checks each
 * parent namespace against the limit its creator had), so a limit set inside bounds this sandbox's
 * processes alone. Every sandbox runs as the same uid, yet a fork bomb in one leaves the others
 * free to fork.
 */
export function limitArgs(limits: CommandLimits): string[] {
  return [
    '/usr/bin/prlimit',
    // SIGXCPU at the limit (ends most programs), SIGKILL a second later for one that catches it.
    `--cpu=${limits.cpuS}:${limits.cpuS + 1}`,
    `--as=${limits.memoryMb * MIB}`,
    `--nproc=${limits.processes}`,
    `--fsize=${limits.fileSizeMb * MIB}`,
    `--nofile=${SANDBOX_OPEN_FILES}`,
    '--core=0',
  ];
}

/**
 * The shell that runs the command (its first argument) under the limits: stderr joins stdout; with
 * network, socat listens on 127.0.0.1:SANDBOX_PROXY_PORT of the sandbox's own network namespace
 * and forwards each connection to the proxy's socket, and the command starts once it listens
 * (bash's /dev/tcp probes it, at most 5 s). socat runs under the same limits.
 */
function innerScript(network: boolean): string {
  // The host's OOM killer takes the sandbox's processes first (children inherit it), not the worker or a database.
  const oom = 'echo 1000 > /proc/self/oom_score_adj 2>/dev/null;';
  if (!network) return `exec 2>&1; ${oom} exec /bin/bash -lc "$1"`;
  const forwarder = `socat TCP-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:${SANDBOX_PROXY_SOCKET} &`;
  const probe = `i=0; until /bin/bash -c '</dev/tcp/127.0.0.1/${SANDBOX_PROXY_PORT}' 2>/dev/null; do i=$((i+1)); [ $i -ge 500 ] && break; sleep 0.01; done`;
  return `exec 2>&1; ${oom} ${forwarder} ${probe}; exec /bin/bash -lc "$1"`;
}

/** bwrap's own environment on the host: fixed, nothing of the worker's or of a session's. */
export const BWRAP_HOST_ENV: Readonly<Record<string, string>> = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

/**
 * bwrap's command line and what its `--args` file descriptor reads: the options (variables' values
 * among them) NUL-separated on the pipe, so they never show in the host's /proc/<pid>/cmdline;
 * bwrap takes only options there, so the command after `--` stays on the command line.
 */
export function splitArgs(args: string[]): { options: Buffer; command: string[] } {
  const end = args.indexOf('--');
  const options = args.slice(0, end);
  for (const arg of args) if (arg.includes('\0')) throw new TypeError('a sandbox argument holds a NUL character');
  return { options: Buffer.from(options.map((arg) => `${arg}\0`).join(''), 'utf8'), command: args.slice(end) };
}

/** The command's environment inside the sandbox (bwrapArgs sets it there): only this, never the worker's. */
export function commandEnv(env: Record<string, string>, proxy: boolean): Record<string, string> {
  for (const [key, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new TypeError(`not an environment variable name: ${JSON.stringify(key.slice(0, 100))}`);
    if (value.includes('\0')) throw new TypeError(`the environment variable ${key} holds a NUL character`);
  }
  const base: Record<string, string> = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: SANDBOX_WORKSPACE,
    // Caches (pip, npm's, XDG tools) in the private /tmp, not in the persisted workspace.
    XDG_CACHE_HOME: '/tmp/.cache',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
  };
  const proxyUrl = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
  const proxyEnv: Record<string, string> = proxy
    ? { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, ALL_PROXY: proxyUrl, http_proxy: proxyUrl, https_proxy: proxyUrl, all_proxy: proxyUrl, NO_PROXY: '', no_proxy: '' }
    : {};
  // The proxy variables last: a command's env cannot point its traffic around the proxy (there is no other way out anyway).
  return { ...base, ...env, ...proxyEnv };
}
