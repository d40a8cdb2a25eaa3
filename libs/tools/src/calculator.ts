import type { OnModuleDestroy } from '@nestjs/common';
import { SandboxedThread } from '#libs/sandbox';
import type { CalculatorReply, CalculatorRequest } from './calculator.worker.js';
import type { ToolOutcome } from './tool.types.js';

/** Far above any real calculation; what it bounds is an expression written to never finish. */
export const CALCULATOR_TIMEOUT_MS = 2_000;
// mathjs itself needs a few tens of MB; a matrix bomb hits this instead of the process's heap.
const HEAP_LIMIT_MB = 128;

/**
 * The `calculator` builtin: evaluates expressions one at a time in a worker thread (see
 * calculator.worker.ts for why), killing and replacing it when an evaluation runs too long or
 * too large.
 */
export class Calculator implements OnModuleDestroy {
  private readonly thread = new SandboxedThread<CalculatorRequest, Exclude<CalculatorReply, { ready: true }>>({
    url: new URL('./calculator.worker.js', import.meta.url),
    heapLimitMb: HEAP_LIMIT_MB,
  });

  constructor(private readonly timeoutMs = CALCULATOR_TIMEOUT_MS) {}

  /** A bad expression is a failed outcome (the model reads why); only an abort rejects. */
  async evaluate(expression: string, signal?: AbortSignal): Promise<ToolOutcome> {
    const result = await this.thread.request({ expression }, { timeoutMs: this.timeoutMs, signal });
    switch (result.kind) {
      case 'reply':
        return result.reply.ok ? { success: true, output: result.reply.output } : failure(result.reply.error);
      case 'timeout':
        return failure(`the evaluation took longer than ${this.timeoutMs} ms`);
      case 'exit':
        return failure('the evaluation was stopped (out of memory, or shutting down)');
      case 'unavailable':
        return failure(`the calculator is unavailable (${result.reason})`);
    }
  }

  close(): void {
    this.thread.close();
  }

  onModuleDestroy(): void {
    this.close();
  }
}

function failure(reason: string): ToolOutcome {
  return { success: false, output: `calculator error: ${reason}` };
}
