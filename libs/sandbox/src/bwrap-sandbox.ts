import { type ChildProcess, spawn } from 'node:child_process';
import { lstatSync, readlinkSync } from 'node:fs';
import { constants } from 'node:os';
import { performance } from 'node:perf_hooks';
import { metrics } from '#libs/metrics';
import { BoundedOutput } from './bounded-output.js';
import { BWRAP_HOST_ENV, bwrapArgs, commandEnv, type RootEntry, splitArgs } from './bwrap-args.js';
import type { SandboxCommand, SandboxCommandResult } from './command-sandbox.js';
import { EgressProxy } from './egress-proxy.js';
import { type CommandEnding, verdict } from './limit-hits.js';
import { watchWorkspace } from './workspace-watch.js';

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
 * BWRAP_HOST_ENV, fixed: the command's variables (commandEnv) are set inside the sandbox only
 * (--clearenv, --setenv), and the options go through `--args` on a pipe (splitArgs), so neither a
 * session's LD_PRELOAD reaches the host-side bwrap nor its values the host's process list. A wall-time timer,
 * an abort, a flood of output or the workspace passing its size or file-count bound (watchWorkspace)
 * kills bwrap's process group; its pid namespace's init dying kills everything in it. Network other
 * than `disabled` goes through an EgressProxy opened for the command.
 *
 * The caller makes the workspace directory, owned by uid/gid (prepareWorkspaceDir), and checks the
 * workspace again after the command (the watch sees it once a second).
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
      const args = bwrapArgs({ workspaceDir: cmd.workspaceDir, limits: cmd.limits, rootEntries: this.rootEntries, proxySocket: proxy?.socketPath ?? null, command: cmd.command, env });
      const result = await this.spawnAndWait(splitArgs(args), cmd);
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

  private spawnAndWait(args: { options: Buffer; command: string[] }, cmd: SandboxCommand): Promise<Omit<SandboxCommandResult, 'durationMs'>> {
    const asUser = process.getuid?.() === 0 ? { uid: this.options.uid, gid: this.options.gid } : {};
    // detached: bwrap leads its own process group, which a kill takes whole. fd 3: its arguments.
    const child = spawn(this.options.bwrapPath ?? 'bwrap', ['--args', '3', ...args.command], { env: { ...BWRAP_HOST_ENV }, detached: true, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], ...asUser });
    const argsPipe = child.stdio[3] as NodeJS.WritableStream & { on(event: 'error', listener: () => void): void };
    // bwrap gone before reading them all: its exit says why.
    argsPipe.on('error', () => undefined);
    argsPipe.end(args.options);
    const output = new BoundedOutput(cmd.limits.outputBytes);
    let killedFor: KillReason | null = null;
    let diskExcess: string | undefined;
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
    const watch = watchWorkspace(cmd.workspaceDir, { bytes: cmd.limits.diskBytes, files: cmd.limits.maxFiles }, (why) => {
      diskExcess = why;
      kill('disk');
    });
    const onAbort = () => kill('aborted');
    cmd.signal.addEventListener('abort', onAbort, { once: true });
    this.running.add(onAbort);
    // Aborted while the proxy opened: the listener came too late to hear it.
    if (cmd.signal.aborted) onAbort();
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        watch.stop();
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
        // The dynamic loader's complaints (a command's LD_PRELOAD naming no library) come from prlimit
        // and sh inside the sandbox, before stderr joins stdout: the command's doing, not a failed start.
        const failure = setupError.split('\n').filter((line) => !line.startsWith('ERROR: ld.so:')).join('\n').trim();
        if (failure !== '' && status !== 0 && killedFor === null) return reject(new Error(`the sandbox could not start: ${failure.slice(0, 500)}`));
        const kept = output.kept();
        const judged = verdict({ status, killedFor, ...(diskExcess ? { diskExcess } : {}), forkFailed, printed: output.printed, outputTail: kept.slice(-TAIL_CHARS) }, cmd.limits);
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
