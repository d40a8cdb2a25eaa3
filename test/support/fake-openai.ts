import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * A fake OpenAI-compatible Chat Completions server: tests script, per model, what each streamed
 * call answers, and read back what the client sent. Plain node:http so it behaves like a real
 * endpoint on the wire (SSE framing, status codes, headers).
 */
export type FakeStep = (
  | { text: string | string[]; reasoning?: string[]; usage?: FakeUsage; /** Send the chunks, then go silent until close. */ stall?: true }
  | { tool_calls: FakeToolCall[]; text?: string; usage?: FakeUsage }
  | { status: number; body?: object; headers?: Record<string, string> }
  | { hang: true }
) & {
  /** The reply waits until this settles: a test holds its turn executing (not yet waiting) while it submits. */
  until?: Promise<unknown>;
};

export interface FakeToolCall {
  /** Omitted: the call is streamed without an id, as some providers do. */
  id?: string;
  name: string;
  arguments: string;
  /** Split the arguments string into this many SSE chunks. */
  chunks?: number;
}

export interface FakeUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  cached?: number;
  /** Part of completion_tokens: reported as completion_tokens_details.reasoning_tokens. */
  reasoning?: number;
}

export interface FakeOpenAi {
  /** Base URL, ending in `/v1`. */
  url: string;
  script(model: string, steps: FakeStep[]): void;
  /**
   * Enforces a context window for that model, as OpenAI does: a request whose prompt counts more
   * tokens (o200k_base, the `gpt-tokenizer` library) answers 400 `context_length_exceeded` with
   * OpenAI's error body, before any script step is used; accepted requests report that count as
   * `prompt_tokens` unless their step scripts usage.
   */
  window(model: string, tokens: number): void;
  /** Parsed JSON bodies received for that model, in order (error replies included). */
  requests(model: string): Record<string, unknown>[];
  close(): Promise<void>;
}

type Delta = Record<string, unknown>;

export async function startFakeOpenAi(port = 0): Promise<FakeOpenAi> {
  const scripts = new Map<string, FakeStep[]>();
  const windows = new Map<string, number>();
  const received = new Map<string, Record<string, unknown>[]>();
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) reply(res, 500, { error: { message: String(error), type: 'server_error', code: null } });
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/chat/completions') {
      reply(res, 404, { error: { message: `fake-openai: no route ${req.method} ${req.url}`, type: 'invalid_request_error', code: null } });
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(await readBody(req)) as Record<string, unknown>;
    } catch {
      reply(res, 400, { error: { message: 'fake-openai: body is not JSON', type: 'invalid_request_error', code: null } });
      return;
    }
    const model = String(body.model);
    received.set(model, [...(received.get(model) ?? []), body]);
    const window = windows.get(model);
    const prompt = window === undefined ? undefined : promptTokens(body);
    if (window !== undefined && prompt !== undefined && prompt > window) {
      reply(res, 400, {
        error: {
          message: `This model's maximum context length is ${window} tokens. However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`,
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      });
      return;
    }
    const scripted: FakeStep = scripts.get(model)?.shift() ?? { text: 'fake-openai: no script left' };
    if (scripted.until) await scripted.until;
    const step = prompt !== undefined && !('status' in scripted) && !('hang' in scripted) ? { ...scripted, usage: { prompt_tokens: prompt, ...scripted.usage } } : scripted;
    if ('hang' in step) return;
    if ('status' in step) {
      const errorBody = step.body ?? { error: { message: `fake-openai: scripted ${step.status}`, type: 'server_error', code: null } };
      reply(res, step.status, errorBody, step.headers);
      return;
    }
    if (body.stream !== true) {
      reply(res, 400, { error: { message: 'fake-openai: only stream: true is supported', type: 'invalid_request_error', code: null } });
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    streamStep(res, model, step, includeUsage);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${bound}/v1`,
    script(model, steps) {
      scripts.set(model, [...(scripts.get(model) ?? []), ...steps]);
    },
    window(model, tokens) {
      windows.set(model, tokens);
    },
    requests(model) {
      return [...(received.get(model) ?? [])];
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Hanging replies and keep-alive connections would otherwise hold the process open.
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

function streamStep(res: ServerResponse, model: string, step: Exclude<FakeStep, { hang: true } | { status: number }>, includeUsage: boolean): void {
  const id = `chatcmpl-fake${Date.now().toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Delta | null, finishReason: string | null = null, usage: unknown = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: delta ? [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] : [],
    ...(usage ? { usage } : {}),
  });

  const deltas: Delta[] = [];
  for (const reasoning of 'reasoning' in step ? (step.reasoning ?? []) : []) deltas.push({ reasoning_content: reasoning });
  const texts = step.text === undefined ? [] : Array.isArray(step.text) ? step.text : [step.text];
  for (const text of texts) deltas.push({ content: text });
  const toolCalls = 'tool_calls' in step ? step.tool_calls : [];
  toolCalls.forEach((call, index) => {
    splitInto(call.arguments, call.chunks ?? 1).forEach((part, n) => {
      const head = n === 0 ? { ...(call.id ? { id: call.id } : {}), type: 'function', function: { name: call.name, arguments: part } } : { function: { arguments: part } };
      deltas.push({ tool_calls: [{ index, ...head }] });
    });
  });
  if (deltas.length === 0) deltas.push({ content: '' });
  const first = deltas[0]!;
  deltas[0] = { role: 'assistant', ...first };

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const delta of deltas) res.write(sse(chunk(delta)));
  if ('stall' in step && step.stall) return;
  res.write(sse(chunk({}, toolCalls.length > 0 ? 'tool_calls' : 'stop')));
  if (includeUsage) {
    const usage = step.usage ?? {};
    const prompt = usage.prompt_tokens ?? 10;
    const completion = usage.completion_tokens ?? deltas.length;
    const totals = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: usage.cached ?? 0 }, completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 } };
    res.write(sse(chunk(null, null, totals)));
  }
  res.end('data: [DONE]\n\n');
}

/** The prompt's tokens as OpenAI counts chat messages: each message's content plus 4, the tools' JSON, 3 to prime the reply. */
function promptTokens(body: Record<string, unknown>): number {
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  let total = 3;
  for (const message of messages) {
    const content = typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '');
    total += 4 + countTokens(content, { disallowedSpecial: new Set() }) + (message.tool_calls ? countTokens(JSON.stringify(message.tool_calls)) : 0);
  }
  return total + (body.tools ? countTokens(JSON.stringify(body.tools)) : 0);
}

function splitInto(text: string, parts: number): string[] {
  const count = Math.max(1, Math.min(Math.floor(parts), text.length));
  return Array.from({ length: count }, (_, i) => text.slice(Math.floor((i * text.length) / count), Math.floor(((i + 1) * text.length) / count)));
}

function sse(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

function reply(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
