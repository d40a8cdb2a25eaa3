import { Injectable } from '@nestjs/common';
import { mayTrustForSession } from '#libs/agents';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { type IdempotentResponse, type Nudge, WaitpointControls } from '#libs/engine';
import type { ResumeEventDto, ToolResultEventDto } from '../dto/waitpoint-events.dto.js';
import { checkTextParts, cutText } from '../input-parser.js';
import { parseWaitpointResponse } from '../waitpoint-response.js';
import { Acceptance, acceptedReceipt } from './acceptance.js';

/** `yuxi.session.input.resume`: answers a question or decides an approval; the turn continues in a new run. */
@Injectable()
export class ResumeTurn {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly waitpoints: WaitpointControls,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, sessionId: string, event: ResumeEventDto, key: string): Promise<IdempotentResponse> {
    const { response, errors } = parseWaitpointResponse(event.response, 'events[0].response');
    if (!response) throw DomainError.validation(errors);
    // Answers are text the model reads as a message's would be: the same bound over all of them.
    if (response.type === 'answer') {
      const texts = response.answers.flatMap(({ answer }, i) => (Array.isArray(answer) ? answer : [answer]).map((text) => [`events[0].response.answers[${i}].answer`, text] as const));
      checkTextParts(texts, this.config.maxInputTextBytes);
    }
    const intent = { ...event, response };
    return this.acceptance.control(principal, sessionId, key, intent, async (manager, session) => {
      const resumed = await this.waitpoints.resume(manager, session, event.turn_id, event.waitpoint_id, response, {
        trustForSession: mayTrustForSession(principal, session.agentSnapshot?.policy),
      });
      return { receipt: { ...acceptedReceipt(sessionId, null), turn_id: event.turn_id, run_id: resumed.runId }, events: resumed.events, nudges: takeoverOf(resumed.runId) };
    });
  }
}

/** `tool_result`: one client tool call's output; the turn continues once every call of its waitpoint has one. */
@Injectable()
export class SubmitToolResult {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly waitpoints: WaitpointControls,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, sessionId: string, event: ToolResultEventDto, key: string): Promise<IdempotentResponse> {
    // Stored cut, as the output of a server tool is: the model reads it on every later call of the session.
    const output = cutText(event.output, this.config.maxInputTextBytes);
    return this.acceptance.control(principal, sessionId, key, event, async (manager, session) => {
      const resumed = await this.waitpoints.toolResult(manager, session, event.turn_id, event.call_id, { success: event.success, output });
      return { receipt: { ...acceptedReceipt(sessionId, null), turn_id: event.turn_id, run_id: resumed.runId }, events: resumed.events, nudges: takeoverOf(resumed.runId) };
    });
  }
}

/** The run a response created for a worker to take over (none when the turn is complete). */
function takeoverOf(runId: string | null): Nudge[] {
  return runId ? [{ kind: 'takeover', runId }] : [];
}
