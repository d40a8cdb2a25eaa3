import assert from 'node:assert/strict';
import { AgentsClient, type ClientOptions, type SessionEvent, type SessionEventStream } from '#libs/sdk';
import { query } from './db.js';
import { env } from './env.js';
import type { SeenRequest, TcpProxy } from './tcp-proxy.js';

// What the SDK's e2e files share: clients (direct, or through a fault-injecting proxy) and event
// collection (the replay window moves for real: test/support/replay-window.ts).

/** Eleven words, 40 ms apart: slow enough to cut the stream mid-turn. */
export const SLOW = 'one two three four five six seven eight nine ten [[delay:40]]';
/** No iteration may run forever: a stuck one fails its test instead. */
export const LIMIT_MS = 60_000;

export const direct = new AgentsClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });

/** A client that reaches the api through `proxy`, with short backoffs (the faults are immediate). */
export function through(proxy: TcpProxy, options: Partial<ClientOptions> = {}): AgentsClient {
  return new AgentsClient({ baseUrl: proxy.url, apiKey: env.apiKey, retry: { baseDelayMs: 20, maxDelayMs: 200 }, ...options });
}

/** Every event the iterator yields, in order (bounded by the signal given to events()). */
export async function collect(stream: SessionEventStream, onEvent: (event: SessionEvent, index: number) => void | Promise<void> = () => undefined): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for await (const event of stream) {
    events.push(event);
    await onEvent(event, events.length - 1);
  }
  return events;
}

export function textOf(events: SessionEvent[]): string {
  let text = '';
  for (const event of events) if (event.type === 'agent.session.turn.output_text.delta') text += event.delta;
  return text;
}

export function seqs(events: SessionEvent[]): number[] {
  return events.flatMap((event) => {
    const seq = (event.yuxi as { seq?: number } | undefined)?.seq;
    return seq === undefined ? [] : [seq];
  });
}

/** The durable events are each there once, in order, without a hole from the first one on. */
export function assertContiguous(events: SessionEvent[], from: number): void {
  const found = seqs(events);
  assert.deepEqual(found, found.map((_, i) => from + i), 'every durable event once, in order');
}

export const isPost = (path: RegExp) => (r: SeenRequest) => r.method === 'POST' && path.test(r.path);
export const EVENTS_PATH = /^\/api\/v1\/agents\/sessions\/[^/]+\/events$/;
export const RECEIPT_PATH = /^\/api\/v1\/agents\/sessions\/[^/]+\/receipt\?/;

export async function inputIds(sessionId: string): Promise<string[]> {
  return (await query<{ id: string }>(`SELECT id FROM inputs WHERE session_id = $1 ORDER BY received_seq`, [sessionId])).map((row) => row.id);
}
