// A worker script for test/components/sandbox.test.ts: answers with its own thread id (so a test can
// tell a replaced thread), or never answers at all.
import { parentPort, threadId } from 'node:worker_threads';

export interface EchoRequest {
  id: number;
  text: string;
  hang?: boolean;
  /** Answer what the thread can reach instead: its environment and code from strings. */
  probe?: boolean;
}
export interface EchoReply {
  id: number;
  text: string;
  threadId: number;
  probe?: { databaseUrl: string | undefined; envKeys: number; eval: string; newFunction: string; asyncFunction: string; viaConstructor: string };
}

function attempt(run: () => unknown): string {
  try {
    run();
    return 'ran';
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
}

const port = parentPort;
if (port) {
  port.on('message', ({ id, text, hang, probe }: EchoRequest) => {
    if (hang) for (;;);
    if (probe) {
      const asyncConstructor = Object.getPrototypeOf(async () => undefined).constructor as FunctionConstructor;
      const result = {
        databaseUrl: process.env.DATABASE_URL,
        envKeys: Object.keys(process.env).length,
        eval: attempt(() => eval('1 + 1')),
        newFunction: attempt(() => new Function('return 1')()),
        asyncFunction: attempt(() => asyncConstructor('return 1')),
        viaConstructor: attempt(() => (() => undefined).constructor('return 1')()),
      };
      port.postMessage({ id, text, threadId, probe: result } satisfies EchoReply);
      return;
    }
    port.postMessage({ id, text, threadId } satisfies EchoReply);
  });
  port.postMessage({ ready: true });
}
