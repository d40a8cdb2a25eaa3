// A worker script for test/unit/sandbox.test.ts: answers with its own thread id (so a test can
// tell a replaced thread), or never answers at all.
import { parentPort, threadId } from 'node:worker_threads';

export interface EchoRequest {
  id: number;
  text: string;
  hang?: boolean;
}
export interface EchoReply {
  id: number;
  text: string;
  threadId: number;
}

const port = parentPort;
if (port) {
  port.on('message', ({ id, text, hang }: EchoRequest) => {
    if (hang) for (;;);
    port.postMessage({ id, text, threadId } satisfies EchoReply);
  });
  port.postMessage({ ready: true });
}
