import { Injectable } from '@nestjs/common';
import { ErrorCode, McpError, type CreateMessageRequestParams, type CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import { AppConfig } from '#libs/config';
import type { Attributes } from '#libs/telemetry';
import type { ModelMessage, ModelUserPart } from '#libs/models';
import type { Usage } from '#libs/engine';
import { ModelStreams } from './model-streams.js';

/** How many characters one token stands for when a server's `maxTokens` cuts an answer short. */
const CHARS_PER_TOKEN = 4;

/** What a sampling request may use: the session's model, under the agent's approval mode. */
export interface SamplingScope {
  /** `provider:model` of the session. */
  model: string;
  /** The agent's tool approval mode: `always_ask` refuses sampling (nobody is there to approve a completion mid-call). */
  approvalMode: string;
  /** The server's label, for the refusal's message. */
  serverLabel: string;
  /** The run's ids for the call's `chat` span (RunTrace.attributes); undefined when tracing is off. */
  trace?: Attributes;
}

/**
 * Answers an MCP server's `sampling/createMessage` with the session's model: the server's
 * messages (text and images) and system prompt as one model call without tools, cut at its
 * `maxTokens` (at most MCP_SAMPLING_MAX_TOKENS). The tokens spent are the caller's to count in the turn's usage.
 */
@Injectable()
export class McpSampling {
  constructor(
    private readonly streams: ModelStreams,
    private readonly config: AppConfig,
  ) {}

  async answer(scope: SamplingScope, params: CreateMessageRequestParams, signal: AbortSignal): Promise<{ result: CreateMessageResult; usage: Usage | null }> {
    if (scope.approvalMode === 'always_ask') {
      throw new McpError(ErrorCode.InvalidRequest, `sampling refused: the agent asks before every action of MCP server "${scope.serverLabel}" (tool_approval_mode always_ask)`);
    }
    const messages = params.messages.map(toModelMessage);
    // The server's maxTokens, within the deployment's cap per completion (MCP_SAMPLING_MAX_TOKENS).
    const maxChars = Math.min(Math.max(1, params.maxTokens), this.config.mcpSamplingMaxTokens) * CHARS_PER_TOKEN;
    let text = '';
    let usage: Usage | null = null;
    let stopReason: CreateMessageResult['stopReason'] = 'endTurn';
    const stopped = new AbortController();
    const stream = this.streams.open(scope.model, { instructions: params.systemPrompt ?? '', messages, tools: [], signal: AbortSignal.any([signal, stopped.signal]) }, scope.trace);
    try {
      for await (const event of stream) {
        if (event.type === 'text_delta') {
          text += event.delta;
          if (text.length >= maxChars) {
            text = text.slice(0, maxChars);
            stopReason = 'maxTokens';
            stopped.abort();
            break;
          }
        } else if (event.type === 'usage') {
          usage = event.usage;
        } else if (event.type === 'finish' && event.reason === 'length') {
          stopReason = 'maxTokens';
        }
      }
    } catch (error) {
      if (!stopped.signal.aborted) throw error;
    }
    return { result: { role: 'assistant', content: { type: 'text', text }, model: scope.model, stopReason }, usage };
  }
}

type SamplingMessage = CreateMessageRequestParams['messages'][number];

/** About how many tokens a sampling request sends (the text of its messages and system prompt), for a budget's reservation. */
export function samplingTokens(params: CreateMessageRequestParams): number {
  const text = params.messages.flatMap((message) => (Array.isArray(message.content) ? message.content : [message.content]) as { type: string; text?: string }[]);
  const chars = text.reduce((sum, block) => sum + (block.type === 'text' ? (block.text ?? '').length : 0), (params.systemPrompt ?? '').length);
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** A server's message as the model sees it: text and images (as data URLs); other content named. */
export function toModelMessage(message: SamplingMessage): ModelMessage {
  const blocks = (Array.isArray(message.content) ? message.content : [message.content]) as { type: string; text?: string; data?: string; mimeType?: string }[];
  const parts: ModelUserPart[] = blocks.map((block) => {
    if (block.type === 'text') return { type: 'text', text: block.text ?? '' };
    if (block.type === 'image' && block.data && message.role === 'user') return { type: 'image', url: `data:${block.mimeType ?? 'image/png'};base64,${block.data}` };
    return { type: 'text', text: `[${block.type}]` };
  });
  const text = parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
  if (message.role === 'assistant') return { role: 'assistant', text };
  return parts.some((p) => p.type === 'image') ? { role: 'user', text, parts } : { role: 'user', text };
}
