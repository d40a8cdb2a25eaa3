import type { HeldTurn, InputTrace, PublicError, WaitpointKind } from '#libs/engine';
import type { ModelEvent, ModelError } from '#libs/models';
import {
  type Attributes,
  captureMessageContent,
  contextOf,
  endSpan,
  linkTo,
  recordError,
  runSpanId,
  type Span,
  SpanKind,
  startSpan,
  traceIdOf,
  withSpan,
} from '#libs/telemetry';
import {
  boundedContent,
  chatAttributes,
  chatResponseAttributes,
  executeToolAttributes,
  invokeAgentAttributes,
  newChatObservation,
  observeModelEvent,
  type RunOutcome,
  runScopeAttributes,
  runSpanPlan,
} from './gen-ai-attributes.js';
import { claimedContexts, consumedInputs, consumedLinks } from './input-links.js';

/**
 * The spans of one held run on this worker (tracing on only: a run has none otherwise, and every
 * hook tests for it first). One `invoke_agent` span per lease of a run: a yield to steers ends it
 * and starts the next run's, on the same worker. Its parent is the context stored with the turn's
 * first input (`config.trace`), so the run is in the trace of the request that accepted its input,
 * on whichever worker runs it. The span is ended by RunExecutor once the run's lease ends, with the
 * outcome recorded on the way (`yuxi.run.outcome`).
 */
export class RunTrace {
  span: Span | undefined;
  private outcome: RunOutcome = 'ended';
  private error: unknown;
  private scope: Attributes;

  private constructor(private readonly held: HeldTurn) {
    this.scope = runScopeAttributes(held.turn.sessionId, held.turn.id, held.run.id);
  }

  /**
   * The run just claimed: its `claim` span (from `claimStartedAt`, a performance.now() reading taken
   * before the claim, to now) and its `invoke_agent` span, both children of the stored context.
   * Undefined when tracing is off.
   */
  static claimed(held: HeldTurn, claimStartedAt: number): RunTrace | undefined {
    const parent = contextOf(held.config.trace);
    const plan = runSpanPlan(held);
    const trace = new RunTrace(held);
    const claim = startSpan('claim', { parent, startTime: new Date(performance.timeOrigin + claimStartedAt), attributes: { ...trace.scope, 'yuxi.claim.kind': plan.kind, 'yuxi.claim.takeover': plan.kind === 'takeover' } });
    if (!claim) return undefined;
    claim.end();
    // Linked too: what the run consumed from requests of their own (a batch's other inputs, a waitpoint's answer).
    const links = [...plan.links, ...consumedLinks(held.config.trace, claimedContexts(held))];
    trace.span = startSpan(`invoke_agent ${held.config.agent_id}`, { parent, spanId: plan.spanId, links, attributes: invokeAgentAttributes(held, plan.kind) });
    if (plan.resumedFrom) trace.span?.addEvent('yuxi.turn.resumed', { 'yuxi.waitpoint.kind': plan.resumedFrom });
    return trace;
  }

  /** The ids a child span of this run carries (the per-session store keeps spans by `yuxi.session_id`). */
  get attributes(): Attributes {
    return this.scope;
  }

  /**
   * The run yielded to steers and the next run of the turn (already `held.run`) goes on here: this
   * span ends, the next run's starts (its own derived id, linked to the run it follows and to the
   * steers it takes, each stored with its request's context).
   */
  yielded(fromRunId: string, steers?: readonly InputTrace[]): void {
    this.outcome = 'yielded';
    this.finish();
    this.scope = runScopeAttributes(this.held.turn.sessionId, this.held.turn.id, this.held.run.id);
    this.outcome = 'ended';
    this.error = undefined;
    const traceId = traceIdOf(this.held.config.trace);
    this.span = startSpan(`invoke_agent ${this.held.config.agent_id}`, {
      parent: contextOf(this.held.config.trace),
      spanId: runSpanId(this.held.run.id),
      links: [...(traceId ? [linkTo(traceId, runSpanId(fromRunId), { 'yuxi.link.reason': 'yield' })] : []), ...consumedLinks(this.held.config.trace, consumedInputs(steers))],
      attributes: invokeAgentAttributes({ ...this.held, lease: { ...this.held.lease, epoch: this.held.run.epoch } }, 'new'),
    });
  }

  /** The turn parks at a waitpoint: the run ends there. */
  waiting(kind: WaitpointKind): void {
    this.outcome = 'waiting';
    this.span?.addEvent('yuxi.turn.waiting', { 'yuxi.waitpoint.kind': kind });
  }

  /** How the run's lease ended; a failure marks the span failed. */
  ended(outcome: RunOutcome, error?: PublicError | unknown): void {
    this.outcome = outcome;
    if (error !== undefined) this.error = error;
  }

  /** Ends the run's span (once). */
  finish(): void {
    const span = this.span;
    if (!span) return;
    this.span = undefined;
    if (this.error !== undefined) recordError(span, asError(this.error));
    endSpan(span, undefined, { 'yuxi.run.outcome': this.outcome });
  }

  /** A durable step's commit: a `commit_step` span around it (the write's retries included). */
  async commitStep<T>(kind: string, write: () => Promise<T>): Promise<T> {
    return this.around('commit_step', { 'yuxi.step.kind': kind }, async (span) => {
      const committed = await write();
      // Nothing committed: the database stayed out of reach past the lease (undefined), or the lease is gone.
      if (committed === undefined || committed === null || committed === false) {
        span?.setAttribute('yuxi.step.committed', false);
        this.outcome = committed === undefined ? 'database_unreachable' : 'lease_lost';
      }
      return committed;
    });
  }

  /** `fn` in a child span of the run's (active while it runs), ended when it settles; a throw marks it failed. */
  async around<T>(name: string, attributes: Attributes, fn: (span: Span | undefined) => Promise<T>, kind?: SpanKind): Promise<T> {
    const span = startSpan(name, { kind, attributes: { ...this.scope, ...attributes } });
    try {
      const value = await withSpan(span, () => fn(span));
      endSpan(span);
      return value;
    } catch (error) {
      endSpan(span, error);
      throw error;
    }
  }
}

/** What a traced model stream needs to know of its call. */
export interface ChatSpanSpec {
  provider: string;
  requestModel: string;
  purpose: 'model' | 'summariser';
  /** The run's ids (RunTrace.attributes): what the per-session store keeps the span by. */
  scope: Attributes | undefined;
  /** The request's content attributes (gen_ai.input.messages, gen_ai.system_instructions): built only when content is captured. */
  content?: () => Attributes;
}

/** A model call's `chat` span, started at the stream's first pull; retries become its events. */
export class ChatTrace {
  span: Span | undefined;

  constructor(private readonly spec: ChatSpanSpec) {}

  retried(error: ModelError, attempt: number, delayMs: number): void {
    this.span?.addEvent('yuxi.model.retry', { 'error.type': error.code, 'yuxi.retry.attempt': attempt + 1, 'yuxi.retry.delay_ms': delayMs });
  }

  /**
   * The stream, in its `chat` span from the first pull to its end: each pull runs with the span
   * active (so the provider's request carries its `traceparent`), each event is observed for the
   * response's attributes. A consumer that stops early (a steer, a lost lease) ends the span
   * without an error, and the stream underneath is returned.
   */
  async *wrap(source: AsyncIterable<ModelEvent>): AsyncGenerator<ModelEvent> {
    const { spec } = this;
    const content = captureMessageContent();
    const span = startSpan(`chat ${spec.requestModel}`, { kind: SpanKind.CLIENT, attributes: { ...chatAttributes(spec.provider, spec.requestModel, spec.purpose), ...spec.scope, ...(content && spec.content ? spec.content() : {}) } });
    this.span = span;
    const observed = newChatObservation(content);
    const iterator = source[Symbol.asyncIterator]();
    let done = false;
    let failure: { error: unknown } | null = null;
    try {
      for (;;) {
        const next = await withSpan(span, () => iterator.next());
        if (next.done) {
          done = true;
          break;
        }
        observeModelEvent(observed, next.value);
        yield next.value;
      }
    } catch (error) {
      failure = { error };
      throw error;
    } finally {
      if (!done && !failure) {
        span?.setAttribute('yuxi.model.stopped', true);
        await withSpan(span, async () => iterator.return?.()).catch(() => undefined);
      }
      endSpan(span, failure ? failure.error : undefined, chatResponseAttributes(observed, spec.requestModel));
    }
  }
}

/** A turn's public error ({code, message}) as an Error with its code, as recordError reads one. */
function asError(error: unknown): unknown {
  if (error instanceof Error) return error;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message !== 'string') return error;
  return Object.assign(new Error(message), { code: typeof code === 'string' ? code : 'error' });
}

/** A tool's name as a span names it: the model chooses it, so it is bounded (the span name and `gen_ai.tool.name`). */
export const MAX_TOOL_NAME_CHARS = 256;

// Control characters (U+0000 above all: Postgres' jsonb refuses it, and the span store would drop
// the whole batch, other sessions' spans too) and a surrogate half a cut would leave.
const CONTROL_CHARS = /\p{Cc}/gu;
const CUT_SURROGATE = /[\ud800-\udbff]$/;

/** The model's tool name without control characters, at most MAX_TOOL_NAME_CHARS (never half a surrogate pair). */
export function boundedToolName(name: string): string {
  const clean = name.replace(CONTROL_CHARS, '');
  return clean.length <= MAX_TOOL_NAME_CHARS ? clean : clean.slice(0, MAX_TOOL_NAME_CHARS).replace(CUT_SURROGATE, '');
}

/** The `execute_tool` span's name. */
export function executeToolSpanName(name: string): string {
  return `execute_tool ${boundedToolName(name)}`;
}

/** The `execute_tool` span's attributes at its start: the arguments only when content is captured. */
export function executeToolStart(name: string, callId: string, source: string | undefined, args: Record<string, unknown>): Attributes {
  const attributes = executeToolAttributes(boundedToolName(name), callId, source);
  if (captureMessageContent()) attributes['gen_ai.tool.call.arguments'] = boundedContent(args);
  return attributes;
}

/**
 * What the call came to, on its `execute_tool` span: a failed outcome marks it failed (`tool_error`;
 * its output, which is content, only as the result attribute when captured), a question to the user
 * says so. Returns what it was given.
 */
export function toolSpanEnd<T extends { outcome: { success: boolean; output: string } } | { elicit: unknown }>(span: Span | undefined, followed: T): T {
  if (!span) return followed;
  if ('elicit' in followed) {
    span.setAttribute('yuxi.tool.waiting', true);
    return followed;
  }
  const { outcome } = followed;
  if (captureMessageContent()) span.setAttribute('gen_ai.tool.call.result', boundedContent(outcome.output));
  if (!outcome.success) recordError(span, Object.assign(new Error('the tool call failed'), { code: 'tool_error' }));
  return followed;
}
