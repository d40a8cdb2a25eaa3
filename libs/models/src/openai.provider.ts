import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import OpenAI from 'openai';
import { AppConfig } from '#libs/config';
import { injectTraceHeaders, tracingOn } from '#libs/telemetry';
import { tokenCount } from '#libs/usage';
import { ModelError, type ModelEvent, type ModelMessage, type ModelProvider, type ModelRequest, type ModelTool, type ModelToolCall, type ModelUsage } from './model.types.js';
import { classifyProviderError } from './provider-errors.js';

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam;
export type ChatCompletionBody = OpenAI.Chat.ChatCompletionCreateParamsStreaming;
type ChatTool = OpenAI.Chat.ChatCompletionTool;
type ChunkDelta = OpenAI.Chat.ChatCompletionChunk.Choice.Delta;
type ToolCallFragment = OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall;

/** The active span's `traceparent` (the model call's `chat` span) for the provider's request; undefined when tracing is off. */
function traceHeaders(): Record<string, string> | undefined {
  if (!tracingOn()) return undefined;
  const headers: Record<string, string> = {};
  injectTraceHeaders(headers);
  return headers;
}

/**
 * `openai:<model>`: any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, …),
 * streamed. The client never retries (maxRetries 0): retries belong to streamWithRetries, which
 * knows whether anything was already streamed.
 */
@Injectable()
export class OpenAiProvider implements ModelProvider {
  readonly provider = 'openai';
  private readonly client: OpenAI;
  private readonly secrets: string[];
  private readonly timeoutMs: number;

  constructor(config: AppConfig) {
    this.client = new OpenAI({
      baseURL: config.openaiBaseUrl,
      apiKey: config.openaiApiKey || 'not-set',
      maxRetries: 0,
      timeout: config.modelTimeoutMs,
    });
    this.secrets = config.openaiApiKey ? [config.openaiApiKey] : [];
    this.timeoutMs = config.modelTimeoutMs;
  }

  /** The Chat Completions body `stream` sends for this request: the model-request audit records exactly this. */
  requestBody(request: ModelRequest): ChatCompletionBody {
    return chatCompletionBody(request);
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const calls = new ToolCallAssembler();
    let usage: ModelUsage | null = null;
    let finishReason: string | null = null;
    let response: { id?: string; model?: string } = {};
    // The client's timeout ends once headers arrive; a stream that then stalls needs its own guard.
    const stalled = new AbortController();
    const stallTimer = setTimeout(() => stalled.abort(), this.timeoutMs);
    try {
      const stream = await this.client.chat.completions.create(chatCompletionBody(request), { signal: AbortSignal.any([request.signal, stalled.signal]), headers: traceHeaders() });
      for await (const chunk of stream) {
        stallTimer.refresh();
        if (chunk.usage) usage = toUsage(chunk.usage);
        // The response's id and model (the same on every chunk): read once, only for a traced call's chat span.
        if (tracingOn() && response.id === undefined && chunk.id) response = { id: chunk.id, ...(chunk.model ? { model: chunk.model } : {}) };
        for (const choice of chunk.choices ?? []) {
          if (choice.finish_reason) finishReason = choice.finish_reason;
          const delta: ChunkDelta | undefined = choice.delta;
          if (!delta) continue;
          const reasoning = reasoningOf(delta);
          if (reasoning) yield { type: 'reasoning_delta', delta: reasoning };
          if (delta.content) yield { type: 'text_delta', delta: delta.content };
          for (const call of delta.tool_calls ?? []) calls.add(call);
        }
        // Time spent by the consumer on what was yielded is not the provider's silence.
        stallTimer.refresh();
      }
      // The client ends a stream aborted mid-body quietly, as if complete; it was not.
      request.signal.throwIfAborted();
      if (stalled.signal.aborted) throw stalled.signal.reason;
    } catch (error) {
      // An abort is the caller's decision (cancel, steer, shutdown), not a provider failure.
      if (request.signal.aborted) throw error;
      if (stalled.signal.aborted) throw new ModelError('model_timeout', `model sent nothing for ${this.timeoutMs} ms`, true);
      throw classifyProviderError(error, { secrets: this.secrets });
    } finally {
      clearTimeout(stallTimer);
    }
    for (const call of calls.complete()) yield { type: 'tool_call', call };
    if (usage) yield { type: 'usage', usage };
    if (finishReason) yield { type: 'finish', reason: finishReason, ...response };
  }
}

/** Tool calls arrive in fragments keyed by `index`; id and name come once, arguments in pieces. */
class ToolCallAssembler {
  private readonly calls = new Map<number, ModelToolCall>();

  add(fragment: ToolCallFragment): void {
    const index = typeof fragment.index === 'number' ? fragment.index : this.calls.size;
    const call = this.calls.get(index) ?? { call_id: '', name: '', arguments: '' };
    if (fragment.id && !call.call_id) call.call_id = fragment.id;
    if (fragment.function?.name && !call.name) call.name = fragment.function.name;
    if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
    this.calls.set(index, call);
  }

  complete(): ModelToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ ...call, call_id: call.call_id || `call_${randomBytes(12).toString('hex')}` }));
  }
}

/**
 * The one place the request body of a call is built (the body only: the API key and every other
 * header are the client's, never part of it). `stream` sends it and the audit records it, so what
 * is recorded is what was sent.
 */
export function chatCompletionBody(request: Omit<ModelRequest, 'signal'>): ChatCompletionBody {
  return {
    model: request.model,
    messages: toChatMessages(request),
    ...(request.tools.length > 0 ? { tools: request.tools.map(toChatTool) } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
}

function toChatMessages({ instructions, messages }: Pick<ModelRequest, 'instructions' | 'messages'>): ChatMessage[] {
  const system: ChatMessage[] = instructions.trim() ? [{ role: 'system', content: instructions }] : [];
  return [...system, ...messages.map(toChatMessage)];
}

function toChatMessage(message: ModelMessage): ChatMessage {
  if (message.role === 'user') {
    if (!message.parts) return { role: 'user', content: message.text };
    return {
      role: 'user',
      content: message.parts.map((part) => (part.type === 'text' ? { type: 'text', text: part.text } : { type: 'image_url', image_url: { url: part.url } })),
    };
  }
  if (message.role === 'tool') return { role: 'tool', tool_call_id: message.call_id, content: message.output };
  const toolCalls = message.tool_calls ?? [];
  if (toolCalls.length === 0) return { role: 'assistant', content: message.text };
  return {
    role: 'assistant',
    content: message.text || null,
    tool_calls: toolCalls.map((call) => ({ id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
  };
}

function toChatTool(tool: ModelTool): ChatTool {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** vLLM and DeepSeek stream `reasoning_content`, OpenRouter `reasoning`; OpenAI itself sends neither. */
function reasoningOf(delta: ChunkDelta): string | undefined {
  const extra = delta as ChunkDelta & { reasoning_content?: unknown; reasoning?: unknown };
  const value = typeof extra.reasoning_content === 'string' && extra.reasoning_content ? extra.reasoning_content : extra.reasoning;
  return typeof value === 'string' && value ? value : undefined;
}

/**
 * The call's tokens: cached input and reasoning output where the provider reports them (chat
 * completions' `*_tokens_details`; a server that answers in the Responses API's names is read too),
 * each sanitised as the ledger stores counts (tokenCount, #libs/usage); cached within input, reasoning within output.
 */
export function toUsage(usage: OpenAI.CompletionUsage): ModelUsage {
  const other = usage as OpenAI.CompletionUsage & {
    input_tokens?: number;
    output_tokens?: number;
    input_tokens_details?: { cached_tokens?: number };
    output_tokens_details?: { reasoning_tokens?: number };
  };
  const input = tokenCount(usage.prompt_tokens ?? other.input_tokens);
  const output = tokenCount(usage.completion_tokens ?? other.output_tokens);
  return {
    input_tokens: input,
    output_tokens: output,
    cached_tokens: Math.min(input, tokenCount(usage.prompt_tokens_details?.cached_tokens ?? other.input_tokens_details?.cached_tokens)),
    reasoning_tokens: Math.min(output, tokenCount(usage.completion_tokens_details?.reasoning_tokens ?? other.output_tokens_details?.reasoning_tokens)),
    total_tokens: usage.total_tokens === undefined || usage.total_tokens === null ? input + output : tokenCount(usage.total_tokens),
  };
}
