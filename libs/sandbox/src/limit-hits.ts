import type { CommandLimits, LimitHit } from './command-sandbox.js';

/** How a command's sandbox ended, as the runner saw it. */
export interface CommandEnding {
  /** bwrap's exit status: the command's own, or 128 + the signal that ended it. */
  status: number | null;
  /** The runner ended it (and why), or null. */
  killedFor: 'timeout' | 'output' | 'aborted' | 'disk' | null;
  /** With killedFor `disk`: how the workspace passed its bound (workspaceExcess). */
  diskExcess?: string;
  /** A fork failed for want of processes (bash's "fork: ... Resource temporarily unavailable"). */
  forkFailed: boolean;
  /** Bytes printed, kept or not. */
  printed: number;
  /** The end of the kept output, where a program says it could not allocate memory. */
  outputTail: string;
}

export interface CommandVerdict {
  exitCode: number | null;
  limitHit: LimitHit | null;
  /** The line said at the end of the output, or null. */
  note: string | null;
}

const SIGXCPU = 24;
const SIGXFSZ = 25;

/**
 * Messages of programs whose allocation failed (RLIMIT_AS makes mmap and brk fail): python's
 * MemoryError, C's and the shells' ENOMEM text, C++'s bad_alloc, V8's and Go's own.
 */
const OUT_OF_MEMORY = /MemoryError|Cannot allocate memory|std::bad_alloc|out of memory|JavaScript heap out of memory|failed to reserve|memory exhausted/i;

/**
 * Whether the command ended on a limit, and the line that says so. The kernel's limits are seen
 * in the exit status (bwrap answers 128 + the signal: SIGXCPU for CPU time, SIGXFSZ for a file too
 * large), the runner's own in why it killed the sandbox; a memory limit is seen in what the
 * program printed when its allocation failed (it decides how to end), and the process limit in a
 * failed fork (a fork bomb then runs into the wall time). A program may also exit 152 or 153 by
 * itself: read as the signal, the price of bwrap folding signals into exit codes.
 */
export function verdict(ending: CommandEnding, limits: CommandLimits): CommandVerdict {
  const ended = (limitHit: LimitHit, note: string): CommandVerdict => ({ exitCode: null, limitHit, note: `command ended: ${note}` });
  if (ending.killedFor === 'aborted') return { exitCode: null, limitHit: null, note: 'command ended: stopped' };
  if (ending.killedFor === 'output') return ended('output', `it printed more than ${Math.round(ending.printed / (1024 * 1024))} MiB, far past the output limit of ${limits.outputBytes} bytes`);
  if (ending.killedFor === 'disk') return ended('disk', `disk limit reached: ${ending.diskExcess ?? 'the workspace passed its bound'}`);
  if (ending.killedFor === 'timeout') {
    const wall = `wall time limit of ${limits.timeoutS} s reached`;
    return ending.forkFailed ? ended('processes', `process limit of ${limits.processes} reached, then the ${wall}`) : ended('timeout', wall);
  }
  if (ending.status === 128 + SIGXCPU) return ended('cpu', `CPU time limit of ${limits.cpuS} s reached`);
  if (ending.status === 128 + SIGXFSZ) return ended('file_size', `file size limit of ${limits.fileSizeMb} MiB reached`);
  if (ending.status !== 0 && OUT_OF_MEMORY.test(ending.outputTail)) return ended('memory', `memory limit of ${limits.memoryMb} MiB per process reached`);
  if (ending.status !== 0 && ending.forkFailed) return ended('processes', `process limit of ${limits.processes} reached`);
  return { exitCode: ending.status, limitHit: null, note: null };
}
