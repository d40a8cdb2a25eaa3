import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { IdempotencyService, type IdempotentResponse, parseApprovalRequestId } from '#libs/engine';
import { metrics } from '#libs/metrics';
import { CompactEventDto, MessageEventDto, PROTOCOL_EVENT_TYPES } from '../dto/submit-event.dto.js';
import { CompactContext } from './compact-context.use-case.js';
import { ControlEvents } from './control-events.js';
import { validateEvent } from './event-validation.js';
import { ResumeEventDto, ToolResultEventDto, UpstreamApprovalResultEventDto, UpstreamToolResultEventDto } from '../dto/waitpoint-events.dto.js';
import { SubmitMessage } from './submit-message.use-case.js';
import { ResumeTurn, SubmitToolResult } from './waitpoint-responses.use-case.js';

/** `POST …/events`: validates the one event against its type's DTO and hands it to that type's use case (the control events through ControlEvents). */
@Injectable()
export class SubmitEvent {
  constructor(
    private readonly submitMessage: SubmitMessage,
    private readonly controlEvents: ControlEvents,
    private readonly resumeTurn: ResumeTurn,
    private readonly submitToolResult: SubmitToolResult,
    private readonly compactContext: CompactContext,
  ) {}

  async execute(principal: Principal, sessionId: string, events: Record<string, unknown>[], rawKey: string | undefined): Promise<IdempotentResponse> {
    const result = await this.dispatch(principal, sessionId, events, rawKey);
    // Only known types get this far (anything else is refused above): a closed label set.
    if (!result.replayed) metrics.inputAccepted(String(events[0]?.type));
    return result;
  }

  private async dispatch(principal: Principal, sessionId: string, events: Record<string, unknown>[], rawKey: string | undefined): Promise<IdempotentResponse> {
    const key = IdempotencyService.requireKey(rawKey);
    const raw = events[0] ?? {};
    const type = raw.type;
    if (type === 'agent.session.input.message') return this.submitMessage.execute(principal, sessionId, await validateEvent(MessageEventDto, raw), key);
    const control = await this.controlEvents.submit(principal, sessionId, raw, key);
    if (control) return control;
    if (type === 'yuxi.session.input.resume') return this.resumeTurn.execute(principal, sessionId, await validateEvent(ResumeEventDto, raw), key);
    if (type === 'yuxi.session.input.compact') return this.compactContext.execute(principal, sessionId, await validateEvent(CompactEventDto, raw), key);
    if (type === 'tool_result') return this.submitToolResult.execute(principal, sessionId, await validateEvent(ToolResultEventDto, raw), key);
    if (type === 'agent.session.input.tool_result') return this.submitToolResult.execute(principal, sessionId, asToolResult(await validateEvent(UpstreamToolResultEventDto, raw)), key);
    if (type === 'agent.session.input.mcp_approval_request_result') return this.resumeTurn.execute(principal, sessionId, asResume(await validateEvent(UpstreamApprovalResultEventDto, raw)), key);
    if (typeof type === 'string' && (PROTOCOL_EVENT_TYPES as readonly string[]).includes(type)) {
      throw new DomainError('not_implemented', `Event type ${type} is not available yet`);
    }
    throw new DomainError('unknown_event_type', `Unknown event type ${JSON.stringify(type)}`, { allowed: PROTOCOL_EVENT_TYPES });
  }
}

const MAX_TOOL_OUTPUT_CHARS = 1_048_576;

/** The upstream tool result as ours: text parts joined; a failure's output is its error when given. */
function asToolResult(event: UpstreamToolResultEventDto): ToolResultEventDto {
  const output = typeof event.output === 'string' ? event.output : (event.output?.map((part) => part.text).join('\n') ?? '');
  // The bound of `tool_result`'s output, over the parts together.
  if (output.length > MAX_TOOL_OUTPUT_CHARS) throw DomainError.validation([{ field: 'events[0].output', errors: [`must be at most ${MAX_TOOL_OUTPUT_CHARS} characters, its parts together`] }]);
  return Object.assign(new ToolResultEventDto(), { type: 'tool_result', turn_id: event.turn_id, call_id: event.call_id, success: event.success, output: !event.success && event.error !== undefined ? event.error : output });
}

/** The upstream approval decision as a resume of the waitpoint its request id names, with one decision. */
function asResume(event: UpstreamApprovalResultEventDto): ResumeEventDto {
  const named = parseApprovalRequestId(event.request_id);
  // The bounds `yuxi.session.input.resume` puts on the ids it names.
  if (!named || named.turnId.length > 64 || named.waitpointId.length > 64 || named.callId.length > 128) throw DomainError.validation([{ field: 'events[0].request_id', errors: ['is not the request_id of an approval request of this session (see its required_actions)'] }]);
  const decision = event.response.decision === 'approve' ? 'approve' : 'reject';
  return Object.assign(new ResumeEventDto(), {
    type: 'yuxi.session.input.resume',
    turn_id: named.turnId,
    waitpoint_id: named.waitpointId,
    response: { type: 'approval', decisions: [{ call_id: named.callId, decision }] },
  });
}
