export { modelAllowed, ModelRegistry } from './model-registry.js';
export {
  MODEL_ERROR_CODES,
  ModelError,
  type ModelEvent,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelTool,
  type ModelToolCall,
  type ModelUsage,
  type ModelUserPart,
  neutralRequestBody,
  requestBodyOf,
} from './model.types.js';
export { ModelsModule } from './models.module.js';
export { type ChatCompletionBody, chatCompletionBody, OpenAiProvider, toUsage } from './openai.provider.js';
export { classifyProviderError, retryAfterMs, type ClassifyOptions } from './provider-errors.js';
export { retryDelayMs, streamWithRetries, type RetryDelayOptions, type StreamRetryOptions } from './retry-policy.js';
export { ScriptedProvider } from './scripted.provider.js';
export { ASK_TOOL, parseScript, type Script, scriptedSummary, type ScriptStep } from './scripted-script.js';
export { countTokens, countTokensIfLoaded, defaultWindowTokens, IMAGE_TOKENS, imageTokens, loadTokenizer, modelImageSize, MESSAGE_OVERHEAD_TOKENS, SCRIPTED_WINDOW_TOKENS } from './tokens.js';
