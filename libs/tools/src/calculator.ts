import type { OnModuleDestroy } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { raceAbort } from './abort.js';
import type { CalculatorReply, CalculatorRequest } from './calculator.worker.js';
import type { ToolOutcome } from './tool.types.js';

/** Far above any real calculation; what it bounds is an expression written to never finish. */
export const CALCULATOR_TIMEOUT_MS = 2_000;
const BOOT_TIMEOUT_MS = 15_000;
// mathjs itself needs a few tens of MB; a matrix bomb hits this instead of the process's heap.
const HEAP_LIMIT_MB = 128;

/**
 * The `calculator` builtin: evaluates expressions one at a time in a worker thread (see
 * calculator.worker.ts for why), killing and replacing it when an evaluation runs too long or
 * too large. The thread is unref'd, so an idle calculator never keeps a process alive.
 */
export class Calculator implements OnModuleDestroy {
  private worker?: Worker;
  private booting?: Promise<Worker>;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;

  constructor(private readonly timeoutMs = CALCULATOR_TIMEOUT_MS) {}

  /** A bad expression is a failed outcome (the model reads why); only an abort rejects. */
  evaluate(expression: string, signal?: AbortSignal): Promise<ToolOutcome> {
    // Serial, so that each expression's time limit measures that expression alone.
    const run = this.queue.then(() => this.run(expression, signal));
    this.queue = run.catch(() => undefined);
    return run;
  }

  close(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.booting = undefined;
    void worker?.terminate();
  }

  onModuleDestroy(): void {
    this.close();
  }

  private async run(expression: string, signal: AbortSignal | undefined): Promise<ToolOutcome> {
    signal?.throwIfAborted();
    let worker: Worker;
    try {
      worker = await raceAbort(this.start(), signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      return failure(`the calculator is unavailable (${(err as Error).message})`);
    }
    return new Promise<ToolOutcome>((resolve, reject) => {
      const id = this.nextId++;
      const finish = (settle: () => void, kill = false) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        if (kill) this.close();
        settle();
      };
      const onMessage = (reply: CalculatorReply) => {
        if (!('id' in reply) || reply.id !== id) return;
        finish(() => resolve(reply.ok ? { success: true, output: reply.output } : failure(reply.error)));
      };
      const onExit = () => finish(() => resolve(failure('the evaluation was stopped (out of memory, or shutting down)')));
      const onAbort = () => finish(() => reject(signal?.reason), true);
      const timer = setTimeout(() => finish(() => resolve(failure(`the evaluation took longer than ${this.timeoutMs} ms`)), true), this.timeoutMs);
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({ id, expression } satisfies CalculatorRequest);
    });
  }

  private start(): Promise<Worker> {
    if (this.booting) return this.booting;
    const worker = new Worker(new URL('./calculator.worker.js', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: HEAP_LIMIT_MB },
    });
    worker.unref();
    this.worker = worker;
    // An 'error' (uncaught exception, out of memory) is always followed by 'exit'; without a
    // listener it would be rethrown in this thread.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      if (this.worker === worker) this.close();
    });
    this.booting = new Promise<Worker>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('did not start in time')), BOOT_TIMEOUT_MS);
      worker.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with code ${code} while starting`));
      });
      worker.once('message', () => {
        clearTimeout(timer);
        resolve(worker);
      });
    });
    // A failed start is not cached: the next call tries a fresh thread.
    this.booting.catch(() => {
      if (this.worker === worker) this.close();
    });
    return this.booting;
  }
}

function failure(reason: string): ToolOutcome {
  return { success: false, output: `calculator error: ${reason}` };
}
