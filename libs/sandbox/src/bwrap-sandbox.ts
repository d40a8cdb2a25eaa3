import { type ChildProcess, spawn } from 'node:child_process';
import { lstatSync, readlinkSync } from 'node:fs';
import { constants } from 'node:os';
import { performance } from 'node:perf_hooks';
import { metrics } from '#libs/metrics';
import { BoundedOutput } from './bounded-output.js';
import { bwrapArgs, commandEnv, type RootEntry } from './bwrap-args.js';
import type { SandboxCommand, SandboxCommandResult } from './command-sandbox.js';
import { EgressProxy } from './egress-proxy.js';
import { type CommandEnding, verdict } from './limit-hits.js';

export interface BwrapOptions {
  /** The unprivileged user and group commands run as, outside the sandbox's user namespace too (when the worker runs as root). */
  uid: number;
  gid: number;
  /** bubblewrap's binary (default: `bwrap` on PATH). */
  bwrapPath?: string;
  /**
   * `host` or `host:port` entries (parseAllowedHosts) the egress proxy may reach even though they
   * are private or loopback addresses: the deployment's exception to its address policy.
   */
  egressAllowedHosts?: string[];
}

type KillReason = NonNullable<CommandEnding['killedFor']>;

/** How much of the output's end is read for a program's out-of-memory message. */
const TAIL_CHARS = 4096;

/**
 * Runs each command in its own bubblewrap sandbox (see bwrapArgs for what it sees, limitArgs for
 * its limits), as the unprivileged uid/gid: bwrap is started with them (not as root with `--uid`),
 * so a host file only root may read stays unreadable whatever is bound. bwrap's own environment is
 * the command's (commandEnv): the sandbox's pid 1 is a bwrap process whose /proc/1/environ the
 * command can read, so the worker's secrets must never be in it. A wall-time timer, an abort or a
 * flood of output kills bwrap's process group; its pid namespace's init dying kills everything in
 * it. Network other than `disabled` goes through an EgressProxy opened for the command.
 *
 * The caller makes the workspace directory, owned by uid/gid (prepareWorkspaceDir), and bounds the
 * workspace's size (RLIMIT_FSIZE bounds a single file).
 */
export class BwrapSandbox {
  /** The running commands' kill switches (close() stops them all). */
  private readonly running = new Set<() => void>();
  private readonly rootEntries: RootEntry[];
  private readonly proxy: EgressProxy;
  private closed = false;

  constructor(private readonly options: BwrapOptions) {
    this.rootEntries = hostRootEntries();
    this.proxy = new EgressProxy({ allowedHosts: options.egressAllowedHosts ?? [] });
  }

  async run(cmd: SandboxCommand): Promise<SandboxCommandResult> {
    if (this.closed) throw new Error('the sandbox runner is closed');
    cmd.signal.throwIfAborted();
    const started = performance.now();
    const env = commandEnv(cmd.env, cmd.network.access !== 'disabled');
    const proxy = cmd.network.access === 'disabled' ? null : await this.proxy.open(cmd.network);
    try {
      const args = bwrapArgs({ workspaceDir: cmd.workspaceDir, limits: cmd.limits, rootEntries: this.rootEntries, proxySocket: proxy?.socketPath ?? null, command: cmd.command });
      const result = await this.spawnAndWait(args, env, cmd);
      const durationMs = Math.round(performance.now() - started);
      metrics.sandboxCommand(result.limitHit ? 'limit' : result.exitCode === 0 ? 'ok' : 'exit_nonzero', durationMs / 1000, result.limitHit);
      return { ...result, durationMs };
    } finally {
      await proxy?.close();
    }
  }

  /** Kills every running command and stops the proxies; run() refuses afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    for (const stop of this.running) stop();
    await this.proxy.close();
  }

  private spawnAndWait(args: string[], env: Record<string, string>, cmd: SandboxCommand): Promise<Omit<SandboxCommandResult, 'durationMs'>> {
    const asUser = process.getuid?.() === 0 ? { uid: this.options.uid, gid: this.options.gid } : {};
    // detached: bwrap leads its own process group, which a kill takes whole.
    const child = spawn(this.options.bwrapPath ?? 'bwrap', args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...asUser });
    const output = new BoundedOutput(cmd.limits.outputBytes);
    let killedFor: KillReason | null = null;
    let forkFailed = false;
    const kill = (reason: KillReason) => {
      if (killedFor !== null) return;
      killedFor = reason;
      killGroup(child);
    };
    const emit = (text: string) => {
      if (text === '' || !cmd.onOutput) return;
      try {
        cmd.onOutput(text);
      } catch {
        // A listener's failure is its own: the command and its output go on.
      }
    };
    const onChunk = (chunk: Buffer) => {
      if (!forkFailed && chunk.includes('Resource temporarily unavailable') && chunk.includes('fork')) forkFailed = true;
      emit(output.push(chunk));
      if (output.flooding) kill('output');
    };
    child.stdout!.on('data', onChunk);
    // Only bwrap and prlimit write here (the command's stderr joins its stdout inside): why the
    // sandbox could not start, kept short.
    let setupError = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      if (setupError.length < 2000) setupError += chunk.toString('utf8');
    });
    const timer = setTimeout(() => kill('timeout'), cmd.limits.timeoutS * 1000);
    const onAbort = () => kill('aborted');
    cmd.signal.addEventListener('abort', onAbort, { once: true });
    this.running.add(onAbort);
    // Aborted while the proxy opened: the listener came too late to hear it.
    if (cmd.signal.aborted) onAbort();
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        cmd.signal.removeEventListener('abort', onAbort);
        this.running.delete(onAbort);
      };
      child.once('error', (error) => {
        finish();
        reject(new Error(`bubblewrap could not be started: ${error.message}`));
      });
      child.once('close', (code, signal) => {
        finish();
        const status = code ?? (signal ? 128 + signalNumber(signal) : null);
        // Not the command's failure: the sandbox never ran it (no user namespaces, a workspace missing).
        if (setupError.trim() !== '' && status !== 0 && killedFor === null) return reject(new Error(`the sandbox could not start: ${setupError.trim().slice(0, 500)}`));
        const kept = output.kept();
        const judged = verdict({ status, killedFor, forkFailed, printed: output.printed, outputTail: kept.slice(-TAIL_CHARS) }, cmd.limits);
        emit(output.cutNote());
        if (judged.note) emit(output.note(judged.note));
        resolve({ exitCode: judged.exitCode, output: output.text(), limitHit: judged.limitHit });
      });
    });
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return constants.signals[signal] ?? 0;
}

/** The host's /bin, /lib, /lib64 and /sbin: recreated as the same symlinks (merged /usr) or bound read-only. */
function hostRootEntries(): RootEntry[] {
  const entries: RootEntry[] = [];
  for (const name of ['bin', 'lib', 'lib64', 'sbin']) {
    try {
      const stat = lstatSync(`/${name}`);
      if (stat.isSymbolicLink()) entries.push({ name, symlink: readlinkSync(`/${name}`) });
      else if (stat.isDirectory()) entries.push({ name, directory: true });
    } catch {
      // Not on this host.
    }
  }
  return entries;
}
