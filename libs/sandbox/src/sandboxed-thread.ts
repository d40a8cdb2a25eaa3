import { type TransferListItem, Worker } from 'node:worker_threads';

/** Time for a fresh thread to load its script and post `{ ready: true }`. */
export const SANDBOX_BOOT_TIMEOUT_MS = 15_000;

export interface SandboxOptions {
  /** The worker script. It posts `{ ready: true }` once loaded, then one message per request carrying that request's `id`. */
  url: URL;
  /** The thread's old-generation heap: a runaway allocation hits this instead of the process's heap. */
  heapLimitMb: number;
  bootTimeoutMs?: number;
  /**
   * Drop what the thread (and the threads it starts) print: a library that writes warnings to
   * stdout would otherwise put lines that are not JSON into the process's structured log. Its
   * failures still reach the caller as replies or errors.
   */
  discardOutput?: boolean;
  /**
   * Leave `eval`, `Function` and the other constructors of code from strings working in the thread
   * (off by default: a parser thread reads hostile input and compiles nothing from strings).
   */
  allowCodeFromStrings?: boolean;
}

export interface SandboxRequestOptions {
  /** The request's own time, from when it is posted (waiting behind others and booting do not count). Past it the thread is replaced. */
  timeoutMs: number;
  /** Rejects with its reason whenever it aborts, waiting or running; a running request's thread is replaced. */
  signal?: AbortSignal;
  /**
   * Only while the request waits for its turn: when it aborts, the request rejects at once with its
   * reason and its turn is skipped; once the request has started it is ignored.
   */
  wait?: AbortSignal;
  transfer?: readonly TransferListItem[];
}

export type SandboxResult<Reply> =
  | { kind: 'reply'; reply: Reply }
  /** Ran past its timeoutMs; the thread was terminated and the next request gets a fresh one. */
  | { kind: 'timeout' }
  /** The thread ended mid-request: its heap limit in practice, but a crash or close() end here too. */
  | { kind: 'exit' }
  /** No thread could be started; `reason` says why. */
  | { kind: 'unavailable'; reason: string };

/**
 * Runs requests one at a time in a worker thread, so that work which may take unbounded time or
 * memory (an input chosen by a client or a model) never stalls this thread's event loop. Serial,
 * so that each request's time limit measures that request alone. The thread is started on first
 * use, unref'd (an idle sandbox never keeps a process alive), and replaced after a timeout, an
 * abort or an exit.
 */
export class SandboxedThread<Request extends { id: number }, Reply extends { id: number }> {
  private worker?: Worker;
  private booting?: Promise<Worker>;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private readonly bootTimeoutMs: number;

  constructor(private readonly options: SandboxOptions) {
    this.bootTimeoutMs = options.bootTimeoutMs ?? SANDBOX_BOOT_TIMEOUT_MS;
  }

  request(payload: Omit<Request, 'id'>, options: SandboxRequestOptions): Promise<SandboxResult<Reply>> {
    const { wait } = options;
    let started = false;
    const turn = this.queue.then(() => {
      // Given up while waiting: its turn passes on without running.
      if (wait?.aborted) return undefined;
      started = true;
      return this.run(payload, options);
    });
    this.queue = turn.catch(() => undefined);
    if (!wait) return turn as Promise<SandboxResult<Reply>>;
    return new Promise<SandboxResult<Reply>>((resolve, reject) => {
      const onGiveUp = () => {
        if (!started) reject(wait.reason);
      };
      if (wait.aborted) return onGiveUp();
      wait.addEventListener('abort', onGiveUp, { once: true });
      turn.then(
        (result) => {
          wait.removeEventListener('abort', onGiveUp);
          if (result) resolve(result);
        },
        (error: unknown) => {
          wait.removeEventListener('abort', onGiveUp);
          reject(error);
        },
      );
    });
  }

  close(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.booting = undefined;
    void worker?.terminate();
  }

  private run(payload: Omit<Request, 'id'>, { timeoutMs, signal, transfer }: SandboxRequestOptions): Promise<SandboxResult<Reply>> {
    signal?.throwIfAborted();
    return new Promise<SandboxResult<Reply>>((resolve, reject) => {
      // Unset while the thread boots: an abort then answers at once but leaves the boot going, for the next request.
      let worker: Worker | undefined;
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const id = this.nextId++;
      const finish = (settle: () => void, kill = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        worker?.off('message', onMessage);
        worker?.off('exit', onExit);
        if (kill) this.close();
        settle();
      };
      const onMessage = (reply: Reply | { ready: true }) => {
        if (!('id' in reply) || reply.id !== id) return;
        finish(() => resolve({ kind: 'reply', reply }));
      };
      const onExit = () => finish(() => resolve({ kind: 'exit' }));
      const onAbort = () => finish(() => reject(signal?.reason), worker !== undefined);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.start().then(
        (started) => {
          if (settled) return;
          worker = started;
          timer = setTimeout(() => finish(() => resolve({ kind: 'timeout' }), true), timeoutMs);
          worker.on('message', onMessage);
          worker.once('exit', onExit);
          worker.postMessage({ ...payload, id }, transfer);
        },
        (error: unknown) => finish(() => resolve({ kind: 'unavailable', reason: (error as Error).message })),
      );
    });
  }

  private start(): Promise<Worker> {
    if (this.booting) return this.booting;
    const quiet = this.options.discardOutput === true;
    const script = this.options.allowCodeFromStrings === true ? '' : FORBID_CODE_FROM_STRINGS;
    // An eval'd bootstrap that imports the real script: the lock-down runs before any of its code.
    const worker = new Worker(`${script}import(${JSON.stringify(this.options.url.href)});`, {
      eval: true,
      resourceLimits: threadLimits(this.options.heapLimitMb),
      // An empty environment: nothing a hostile input reaches in the thread can read SECRETS_KEY,
      // DATABASE_URL or a provider's key (process.env is the thread's own copy, empty).
      env: {},
      stdout: quiet,
      stderr: quiet,
    });
    if (quiet) {
      worker.stdout.resume();
      worker.stderr.resume();
    }
    worker.unref();
    this.worker = worker;
    // An 'error' (uncaught exception, out of memory) is always followed by 'exit'; without a
    // listener it would be rethrown in this thread.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      if (this.worker === worker) this.close();
    });
    this.booting = new Promise<Worker>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('did not start in time')), this.bootTimeoutMs);
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

/**
 * The thread's V8 limits: the old generation (`heapLimitMb`), and the young generation and code
 * range too, which are otherwise sized from the machine's memory and are not counted in the old
 * generation. Memory outside the JS heap (ArrayBuffers, WebAssembly) is bounded by what the thread
 * is given to decode (pixel limits, page and character limits), not here.
 */
export function threadLimits(heapLimitMb: number): { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb: number; codeRangeSizeMb: number } {
  return { maxOldGenerationSizeMb: heapLimitMb, maxYoungGenerationSizeMb: Math.min(32, Math.max(4, Math.floor(heapLimitMb / 4))), codeRangeSizeMb: 64 };
}

/**
 * What runs in a thread before its script: code from strings (`eval`, `new Function` and the
 * async and generator function constructors) throws. V8's own switch for this
 * (--disallow-code-generation-from-strings) is process-wide and refused in a Worker's execArgv, and
 * the api's ajv compiles validators with `new Function`, so the thread locks its own globals
 * instead: every way to reach these constructors (the globals and each function prototype's
 * `constructor`) is replaced and non-configurable. WebAssembly (tesseract) is unaffected.
 */
const FORBID_CODE_FROM_STRINGS = `{
  const refuse = () => { throw new EvalError('code generation from strings is disallowed in this thread'); };
  const kinds = [function () {}, async function () {}, function* () {}, async function* () {}].map((f) => Object.getPrototypeOf(f));
  for (const prototype of kinds) {
    const blocked = function () { refuse(); };
    blocked.prototype = prototype;
    // An accessor, so that code assigning its own functions a \`constructor\` (pdf.js does) still can.
    Object.defineProperty(prototype, 'constructor', {
      get: () => blocked,
      set(value) {
        if (this !== prototype) Object.defineProperty(this, 'constructor', { value, writable: true, configurable: true, enumerable: true });
      },
      configurable: false,
    });
    if (prototype === Function.prototype) Object.defineProperty(globalThis, 'Function', { value: blocked, writable: false, configurable: false, enumerable: false });
  }
  Object.defineProperty(globalThis, 'eval', { value: function eval() { refuse(); }, writable: false, configurable: false, enumerable: false });
}
`;
