export { AttachmentPreparer } from './attachment-preparer.js';
export { FencingStats } from './fencing-stats.js';
export { OutboxRelay } from './outbox-relay.js';
export { RecoveryService, type SweepReport } from './recovery.service.js';
export { ExpiredRowsCleanup } from './expired-rows-cleanup.js';
export { LeaseTakeovers } from './lease-takeovers.js';
export { PreparationResumption } from './preparation-resumption.js';
export { WaitingWorkNudges } from './waiting-work-nudges.js';
export { RuntimeModule } from './runtime.module.js';
export { SessionDriver } from './session-driver.js';
export { RunExecutor } from './run-executor.js';
export { DrivePasses } from './drive-passes.js';
export { type MessageAttachment, toModelMessages, withAttachmentList } from './model-context.js';
export { type CheckedArguments, type NextStep, OUTCOME_UNKNOWN, planNextStep, type ToolPolicy, type TurnBudget, withinBudget } from './step-plan.js';
export { toolPolicy } from './tool-policy.js';
export { commandEnding, commandNotRun, HarnessCalls } from './harness-calls.js';
export { decide, decideInterrupted, type Interruption, interruptionOf, type RunCommand } from './run-decider.js';
export { type RunFact, type RunHistory, spent, stepsSinceInput, withFact } from './run-history.js';
export { LeaseLostError, ShuttingDownError, TurnCancelledError, TurnLimitError } from './run-errors.js';
export { WORKER_ID } from './worker-identity.js';
export { measuredProvider, modelCallOutcome } from './model-metrics.js';
export { ImageReferences, MISSING_IMAGE_TEXT } from './image-references.js';
export { capRequestImages, dataUrlBytes, imageLeftOutText, imageTokenAdjustment, ModelImages } from './model-images.js';
export { compactionCut, type ContextMeasure, type ContextPolicy, contextPolicy, contextTokens, decideContext, type PlannedItem } from './context-policy.js';
export { SUMMARY_HEADING, summaryPrompt, transcript, transcriptLine } from './compaction-prompt.js';
export { type CachedContext, ContextCache } from './context-cache.js';
export { CallInFlight, ELICITATION_LOST, McpCallsInFlight, RemoteCall } from './mcp-calls-in-flight.js';
export { McpSampling, toModelMessage as samplingMessage } from './mcp-sampling.js';
export { PROGRESS_EVENTS_PER_SECOND, ProgressThrottle, type ThrottleClock } from './progress-throttle.js';
export { OUTPUT_BATCH_BYTES, OUTPUT_BATCH_MS, OutputBatcher } from './output-batcher.js';
export {
  boundedContent,
  boundedMessagesJson,
  chatAttributes,
  chatResponseAttributes,
  executeToolAttributes,
  inputMessagesJson,
  invokeAgentAttributes,
  MAX_CONTENT_CHARS,
  newChatObservation,
  observeModelEvent,
  outputMessagesJson,
  providerName,
  runScopeAttributes,
  runSpanPlan,
  toolType,
} from './gen-ai-attributes.js';
export { boundedToolName, ChatTrace, executeToolSpanName, executeToolStart, MAX_TOOL_NAME_CHARS, RunTrace } from './run-spans.js';
export { claimedContexts, type ConsumedContext, consumedInputs, consumedLinks } from './input-links.js';
