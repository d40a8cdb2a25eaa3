import { Injectable } from '@nestjs/common';
import { assertApprovalMode, assertModelOverride } from '#libs/agents';
import { AppConfig } from '#libs/config';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { frozenInputConfig, type IdempotentResponse, type InputMessage } from '#libs/engine';
import { ModelRegistry } from '#libs/models';
import type { MessageEventDto } from '../dto/submit-event.dto.js';
import { InlineImages } from '../inline-images.js';
import { checkInputText, parseAgentInput } from '../input-parser.js';
import { MessageAcceptance } from './message-acceptance.js';

/**
 * Queues a user message: a follow-up (FIFO) or a steer into the running turn. The request is
 * checked here (overrides, text bounds, inline images); MessageAcceptance accepts it (the
 * owner-scoped 404 included) and says whether the running turn's worker is to be told of a steer.
 */
@Injectable()
export class SubmitMessage {
  constructor(
    private readonly messages: MessageAcceptance,
    private readonly models: ModelRegistry,
    private readonly inlineImages: InlineImages,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, sessionId: string, event: MessageEventDto, key: string): Promise<IdempotentResponse> {
    const hasOverride = event.yuxi?.model !== undefined || event.yuxi?.tool_approval_mode !== undefined;
    if (event.yuxi?.mode === 'steer' && hasOverride) {
      throw DomainError.validation(
        ['model', 'tool_approval_mode']
          .filter((field) => event.yuxi?.[field as 'model' | 'tool_approval_mode'] !== undefined)
          .map((field) => ({ field: `events[0].yuxi.${field}`, errors: ['per-message overrides are accepted on follow-ups only, not on steer'] })),
      );
    }
    const modelOverride = event.yuxi?.model === undefined ? undefined : this.models.validate(event.yuxi.model);
    const messages: InputMessage[] = parseAgentInput(event.input).messages;
    checkInputText(event.input, messages, this.config.maxInputTextBytes, 'events[0].input');
    // Inline images become session files; the intent holds each one's SHA-256, so a replay hashes the same.
    const images = await this.inlineImages.decode({ ownerId: principal.userId, sessionId }, messages, 'events[0].input');

    const intent = { operation: event.type, session_id: sessionId, event: { ...event, input: images.intentMessages() } };
    const { result } = await this.messages.accept(principal, sessionId, key, intent, {
      requestedMode: event.yuxi?.mode,
      hasOverride,
      messages: images.messagesFor(sessionId),
      attachmentFileIds: event.yuxi?.attachment_file_ids ?? [],
      config: (session) => {
        // The agent's policy travels in the session's snapshot: checking it costs no query, and only overrides pay it.
        if (modelOverride !== undefined) assertModelOverride(principal, session.agentSnapshot?.policy, session.model, modelOverride, 'events[0].yuxi.model');
        if (event.yuxi?.tool_approval_mode !== undefined) assertApprovalMode(principal, session.agentSnapshot?.policy, event.yuxi.tool_approval_mode, 'events[0].yuxi.tool_approval_mode');
        return frozenInputConfig(session, { model: modelOverride, toolApprovalMode: event.yuxi?.tool_approval_mode });
      },
    }, images);
    return result;
  }
}
