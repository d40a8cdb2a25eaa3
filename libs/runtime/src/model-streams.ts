import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, ThrottledLog } from '#libs/config';
import { type Attributes, tracingOn } from '#libs/telemetry';
import { type ModelEvent, ModelRegistry, type ModelRequest, type ModelTool, requestBodyOf, streamWithRetries } from '#libs/models';
import type { ResolvedTool } from '#libs/tools';
import { RUN_LOG_CONTEXT } from './durable-writes.js';
import { inputMessagesJson, systemInstructionsJson } from './gen-ai-attributes.js';
import { measuredProvider } from './model-metrics.js';
import { ChatTrace } from './run-spans.js';

/** The tools as a model is offered them (and as their size in the context is counted). */
export function modelTools(tools: readonly ResolvedTool[]): ModelTool[] {
  return tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
}

/**
 * How a run calls a model, whatever for (the agent's call, the summariser's): resolved from its
 * `provider:model` reference, measured, and retried under the deployment's policy (backoff,
 * Retry-After) as long as nothing was streamed yet.
 */
@Injectable()
export class ModelStreams {
  private readonly retryLog = new ThrottledLog(new Logger(RUN_LOG_CONTEXT));

  constructor(
    private readonly models: ModelRegistry,
    private readonly config: AppConfig,
  ) {}

  /**
   * The call's events. Traced, they come through a `chat` span (ChatTrace) that the run's ids
   * (`scope`: RunTrace.attributes) place in the session's store; off, the stream is returned as is.
   */
  open(ref: string, request: Omit<ModelRequest, 'model'>, scope?: Attributes): AsyncIterable<ModelEvent> {
    const { provider, model } = this.models.resolve(ref);
    const purpose = request.purpose === 'compaction' ? 'summariser' : 'model';
    const chat = tracingOn()
      ? new ChatTrace({
          provider: provider.provider,
          requestModel: model,
          purpose,
          scope,
          content: () => ({ 'gen_ai.input.messages': inputMessagesJson(request.messages), ...(request.instructions ? { 'gen_ai.system_instructions': systemInstructionsJson(request.instructions) } : {}) }),
        })
      : undefined;
    const stream = streamWithRetries(measuredProvider(provider), { ...request, model }, {
      maxRetries: this.config.modelMaxRetries,
      maxDelayMs: this.config.modelRetryMaxDelayMs,
      onRetry: (error, attempt, delayMs) => {
        this.retryLog.warn(`${purpose} ${ref}: ${error.code}, retry ${attempt + 1} in ${delayMs} ms`);
        chat?.retried(error, attempt, delayMs);
      },
    });
    return chat ? chat.wrap(stream) : stream;
  }

  /**
   * The exact request `open` sends for the same arguments (every retry sends it again): the body
   * the provider builds, never its headers or key. What the model-request audit records.
   */
  requestOf(ref: string, request: Omit<ModelRequest, 'model'>): object {
    const { provider, model } = this.models.resolve(ref);
    return requestBodyOf(provider, { ...request, model });
  }
}
