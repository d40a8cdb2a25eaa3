import { after, before } from 'node:test';
import { env } from './env.js';
import { type FakeOpenAi, startFakeOpenAi } from './fake-openai.js';
import { SseStream } from './sse.js';

/**
 * The fake OpenAI server of a describe block (call it inside the block): started on the suite's
 * port before its tests, closed after them together with every stream `open` gave them.
 */
export function useFakeOpenAi(): { readonly fake: FakeOpenAi; open(sessionId: string, lastEventId?: string): Promise<SseStream> } {
  let server: FakeOpenAi | undefined;
  const streams: SseStream[] = [];
  before(async () => {
    server = await startFakeOpenAi(env.fakeOpenAiPort);
  });
  after(async () => {
    streams.forEach((stream) => stream.close());
    await server?.close();
  });
  return {
    get fake(): FakeOpenAi {
      if (!server) throw new Error('the fake OpenAI server starts in the block\'s before hook');
      return server;
    },
    async open(sessionId: string, lastEventId?: string): Promise<SseStream> {
      const stream = await SseStream.open(sessionId, lastEventId === undefined ? {} : { lastEventId });
      streams.push(stream);
      return stream;
    },
  };
}
