import type { CommittedStep, HeldTurn, WaitpointKind } from '#libs/engine';
import type { ModelEvent, ModelMessage, ModelToolCall } from '#libs/models';
import { toolSourceLabel } from '#libs/metrics';
import { type Attributes, type Link, linkTo, RUN_ATTRIBUTE, runSpanId, SESSION_ATTRIBUTE, traceIdOf, TURN_ATTRIBUTE } from '#libs/telemetry';

/**
 * The attributes of the worker's spans, built from what a run already has (its held turn, the
 * events of a model stream, a tool's outcome): pure functions, so what a span says is unit-tested
 * without an SDK. Names follow the OpenTelemetry GenAI semantic conventions where they exist
 * (`gen_ai.*`), the service's own under `yuxi.*`. Message content is added by the callers only when
 * captureMessageContent() says so; nothing here decides that.
 */

/** Each content attribute (messages, tool arguments and results, a command's text) is bounded: 64 KiB of JSON. */
export const MAX_CONTENT_CHARS = 64 * 1024;

/** The ids every span of a run carries: `yuxi.session_id` is what the per-session span store keeps. */
export function runScopeAttributes(sessionId: string, turnId: string, runId: string): Attributes {
  return { [SESSION_ATTRIBUTE]: sessionId, [TURN_ATTRIBUTE]: turnId, [RUN_ATTRIBUTE]: runId };
}

/** `gen_ai.provider.name`: the conventions' value where there is one, else the service's own (`yuxi.scripted`). */
export function providerName(provider: string): string {
  return provider === 'openai' ? 'openai' : `yuxi.${provider}`;
}

/** How a worker came to hold a run: claimed from the queue, resumed after a waitpoint was answered, or taken over after a crash or a release. */
export type ClaimKind = 'new' | 'resume' | 'takeover';

/** What the claim decides about a run's `invoke_agent` span: its fixed id, its links, and the event it starts with. */
export interface RunSpanPlan {
  kind: ClaimKind;
  /** Always `runSpanId(run.id)`: each run is leased by one claim (a takeover or a resume leases a new successor run). */
  spanId: string;
  links: Link[];
  /** A resumed run starts with `yuxi.turn.resumed` of this waitpoint kind. */
  resumedFrom: WaitpointKind | null;
}

/**
 * A takeover or a resume leases a successor run (`resume_from_run_id` names the one before), never
 * the run that stopped, so every run's span takes the id derived from its own id, and the span of
 * the run before is linked by the id derived from its id: a dead worker's span that was never
 * exported is still the parent its exported children name. The waitpoint's response is recorded as
 * a `waitpoint` step of the run that waited: a resume when that run is the one before.
 */
export function runSpanPlan(held: Pick<HeldTurn, 'fresh' | 'run' | 'steps' | 'config'>): RunSpanPlan {
  const spanId = runSpanId(held.run.id);
  const before = held.run.resumeFromRunId;
  if (held.fresh || !before) return { kind: 'new', spanId, links: [], resumedFrom: null };
  const waitpoint = held.steps.find((step) => step.kind === 'waitpoint' && step.runId === before);
  const kind: ClaimKind = waitpoint ? 'resume' : 'takeover';
  const traceId = traceIdOf(held.config.trace);
  // Without a stored context the run before started a trace of its own: nothing to link to.
  const links = traceId ? [linkTo(traceId, runSpanId(before), { 'yuxi.link.reason': kind })] : [];
  return { kind, spanId, links, resumedFrom: waitpoint ? waitpointKindOf(waitpoint) : null };
}

function waitpointKindOf(step: CommittedStep): WaitpointKind {
  const kind = (step.output as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' ? (kind as WaitpointKind) : 'question';
}

/** The `invoke_agent` span's attributes at its start. */
export function invokeAgentAttributes(held: Pick<HeldTurn, 'turn' | 'run' | 'config' | 'lease'>, kind: ClaimKind): Attributes {
  return {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.id': held.config.agent_id,
    // The frozen config knows the agent by id only; reading its name would cost a statement per run.
    'gen_ai.agent.name': held.config.agent_id,
    'gen_ai.request.model': held.run.model,
    ...runScopeAttributes(held.turn.sessionId, held.turn.id, held.run.id),
    'yuxi.run.epoch': held.lease.epoch,
    ...(kind === 'takeover' ? { 'yuxi.run.takeover': true } : {}),
    ...(kind === 'resume' ? { 'yuxi.run.resumed': true } : {}),
  };
}

/** The `chat` span's attributes at its start. */
export function chatAttributes(provider: string, requestModel: string, purpose: 'model' | 'summariser'): Attributes {
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': providerName(provider),
    'gen_ai.request.model': requestModel,
    'yuxi.model.purpose': purpose,
  };
}

/** What a model stream showed of itself, gathered event by event (the output only when content is captured). */
export interface ChatObservation {
  inputTokens: number | null;
  outputTokens: number | null;
  finishReasons: string[];
  responseId: string | null;
  responseModel: string | null;
  /** Null: content is not captured. */
  text: string | null;
  toolCalls: ModelToolCall[];
}

export function newChatObservation(captureContent: boolean): ChatObservation {
  return { inputTokens: null, outputTokens: null, finishReasons: [], responseId: null, responseModel: null, text: captureContent ? '' : null, toolCalls: [] };
}

/** Adds one event of the stream; text is kept only up to the content bound. */
export function observeModelEvent(observed: ChatObservation, event: ModelEvent): void {
  switch (event.type) {
    case 'usage':
      observed.inputTokens = event.usage.input_tokens;
      observed.outputTokens = event.usage.output_tokens;
      return;
    case 'finish':
      observed.finishReasons.push(event.reason);
      if (event.id) observed.responseId = event.id;
      if (event.model) observed.responseModel = event.model;
      return;
    case 'text_delta':
      if (observed.text !== null && observed.text.length < MAX_CONTENT_CHARS) observed.text += event.delta;
      return;
    case 'tool_call':
      if (observed.text !== null) observed.toolCalls.push(event.call);
      return;
    default:
  }
}

/** The `chat` span's attributes at its end: what the response said (the request's model when the provider named none). */
export function chatResponseAttributes(observed: ChatObservation, requestModel: string): Attributes {
  const attributes: Attributes = { 'gen_ai.response.model': observed.responseModel ?? requestModel };
  if (observed.responseId !== null) attributes['gen_ai.response.id'] = observed.responseId;
  if (observed.inputTokens !== null) attributes['gen_ai.usage.input_tokens'] = observed.inputTokens;
  if (observed.outputTokens !== null) attributes['gen_ai.usage.output_tokens'] = observed.outputTokens;
  if (observed.finishReasons.length > 0) attributes['gen_ai.response.finish_reasons'] = observed.finishReasons;
  if (observed.text !== null) attributes['gen_ai.output.messages'] = outputMessagesJson(observed.text, observed.toolCalls, observed.finishReasons.at(-1) ?? null);
  return attributes;
}

/** A part of a message as the GenAI conventions write it. */
type MessagePart = Record<string, unknown>;
interface ConventionMessage {
  role: string;
  parts: MessagePart[];
  finish_reason?: string;
}

/** `gen_ai.input.messages` (JSON): the request's conversation, images left out (never their data), bounded by MAX_CONTENT_CHARS. */
export function inputMessagesJson(messages: readonly ModelMessage[]): string {
  return boundedMessagesJson(messages.map(conventionMessage));
}

/** `gen_ai.system_instructions` (JSON): the instructions as one text part, bounded. */
export function systemInstructionsJson(instructions: string): string {
  return JSON.stringify([{ type: 'text', content: cut(instructions, MAX_CONTENT_CHARS - 64) }]);
}

/** `gen_ai.output.messages` (JSON): the assistant's text and tool calls, bounded. */
export function outputMessagesJson(text: string, toolCalls: readonly ModelToolCall[], finishReason: string | null): string {
  const parts: MessagePart[] = text ? [{ type: 'text', content: text }] : [];
  for (const call of toolCalls) parts.push({ type: 'tool_call', id: call.call_id, name: call.name, arguments: call.arguments });
  return boundedMessagesJson([{ role: 'assistant', parts, ...(finishReason ? { finish_reason: finishReason } : {}) }]);
}

function conventionMessage(message: ModelMessage): ConventionMessage {
  switch (message.role) {
    case 'user':
      return { role: 'user', parts: message.parts ? message.parts.map((part) => (part.type === 'text' ? { type: 'text', content: part.text } : { type: 'blob', modality: 'image' })) : [{ type: 'text', content: message.text }] };
    case 'assistant': {
      const parts: MessagePart[] = message.text ? [{ type: 'text', content: message.text }] : [];
      for (const call of message.tool_calls ?? []) parts.push({ type: 'tool_call', id: call.call_id, name: call.name, arguments: call.arguments });
      return { role: 'assistant', parts };
    }
    case 'tool':
      return { role: 'tool', parts: [{ type: 'tool_call_response', id: message.call_id, response: message.output }] };
    default:
      return { role: 'unknown', parts: [] };
  }
}

/**
 * The messages as JSON of at most MAX_CONTENT_CHARS: the latest ones that fit (a conversation's end
 * is what explains a call), and when not even the last fits, that one with its texts cut. Always
 * valid JSON; each message is serialised once (linear in the conversation).
 */
export function boundedMessagesJson(messages: readonly ConventionMessage[], maxChars = MAX_CONTENT_CHARS): string {
  const kept: string[] = [];
  let size = 2;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const json = JSON.stringify(messages[index]);
    if (size + json.length + 1 > maxChars) break;
    kept.push(json);
    size += json.length + 1;
  }
  if (kept.length === 0 && messages.length > 0) {
    const last = messages[messages.length - 1]!;
    const share = Math.max(0, Math.floor((maxChars - 256) / Math.max(1, last.parts.length)) - 64);
    const shortened = { ...last, parts: last.parts.map((part) => Object.fromEntries(Object.entries(part).map(([key, value]) => [key, typeof value === 'string' ? cut(value, share) : value]))) };
    // JSON escapes can still grow a cut text: cut again at the whole's bound as the last resort.
    const json = JSON.stringify([shortened]);
    return json.length <= maxChars ? json : JSON.stringify([{ role: last.role, parts: [{ type: 'text', content: cut(JSON.stringify(last.parts), Math.floor(maxChars / 3)) }] }]);
  }
  return `[${kept.reverse().join(',')}]`;
}

/** A content attribute's value: JSON of `value`, cut at MAX_CONTENT_CHARS (then not valid JSON: marked with a trailing ellipsis). */
export function boundedContent(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return cut(text, MAX_CONTENT_CHARS);
}

function cut(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, Math.max(0, maxChars - 1))}…`;
}

/**
 * `gen_ai.tool.type`: `function` for a tool the client runs (a client tool), `extension` for one the
 * service runs on the agent's side (builtin, MCP, the environment's harness, coordination).
 */
export function toolType(source: string | undefined): 'function' | 'extension' {
  return source === 'client' ? 'function' : 'extension';
}

/** The `execute_tool` span's attributes at its start. */
export function executeToolAttributes(name: string, callId: string, source: string | undefined): Attributes {
  return {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': name,
    'gen_ai.tool.call.id': callId,
    'gen_ai.tool.type': toolType(source),
    'yuxi.tool.source': toolSourceLabel(source),
  };
}

/** How a run's lease ended, as its `invoke_agent` span says it (`yuxi.run.outcome`). */
export type RunOutcome = 'completed' | 'failed' | 'cancelled' | 'waiting' | 'yielded' | 'released' | 'lease_lost' | 'database_unreachable' | 'ended';
