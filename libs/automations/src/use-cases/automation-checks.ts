import { Injectable } from '@nestjs/common';
import { AgentsService, parseEnvironmentParam } from '#libs/agents';
import { agentViewerOf, type Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { FilesRepository } from '#libs/files';
import { SessionsRepository } from '#libs/engine';
import { checkInputText, metadataErrors, parseAgentInput } from '#libs/protocol';
import type { AutomationTarget, FiringPrincipal } from '../automation.types.js';
import type { AutomationTargetParamDto } from '../dto/automation-params.dto.js';
import { type CronSchedule, parseSchedule } from '../schedule/cron-schedule.js';

/** A checked target, with the columns the table keeps beside it (the list filter, the agent). */
export interface CheckedTarget {
  target: AutomationTarget;
  targetSessionId: string | null;
  agentId: string | null;
}

/** The identity an automation fires as: the creator's, without the per-request parts. */
export function firingPrincipalOf(principal: Principal): FiringPrincipal {
  const { userId, actorId, keyId, access, appId, endUser, role, isAdmin } = principal;
  return { userId, actorId, keyId, access, appId, endUser, role, isAdmin };
}

/** 422 naming the field. */
export function fieldError(field: string, error: string): DomainError {
  return DomainError.validation([{ field, errors: [error] }]);
}

export function checkMetadata(value: unknown, field: string): Record<string, string> {
  const errors = metadataErrors(value);
  if (errors.length > 0) throw DomainError.validation([{ field, errors }]);
  return value as Record<string, string>;
}

/** A cron expression in a zone, or 422 naming `expression` / `timezone`. */
export function checkSchedule(expression: string, timezone: string, minIntervalS: number): CronSchedule {
  const parsed = parseSchedule(expression, timezone, minIntervalS);
  if ('problems' in parsed) throw DomainError.validation(parsed.problems.map((problem) => ({ field: problem.field, errors: [problem.message] })));
  return parsed.schedule;
}

/**
 * What an automation's target may name, checked when it is saved as a session create or a message
 * would check it: the agent visible to the caller (404), the input within a session input's bounds,
 * a new session's environment files the caller's (404 naming each, as a session create says), the existing session the caller's (404) and a root (a cooperation member is 409). The firing path
 * checks again when each time fires: a target gone since then fails that invocation.
 */
@Injectable()
export class AutomationTargetChecks {
  constructor(
    private readonly agents: AgentsService,
    private readonly sessions: SessionsRepository,
    private readonly files: FilesRepository,
    private readonly config: AppConfig,
  ) {}

  async check(principal: Principal, dto: AutomationTargetParamDto): Promise<CheckedTarget> {
    return dto.type === 'new_session' ? this.newSession(principal, dto) : this.existingSession(principal, dto);
  }

  private async newSession(principal: Principal, dto: AutomationTargetParamDto): Promise<CheckedTarget> {
    for (const field of ['session_id', 'instructions'] as const) if (dto[field] !== undefined) throw fieldError(`target.${field}`, 'is a field of an existing_session target');
    if (dto.agent !== undefined && dto.agent !== null) throw new DomainError('not_implemented', 'target.agent: an inline agent is not available in this deployment; name a saved agent with target.agent_id', { field: 'target.agent' });
    if (dto.vault_ids && dto.vault_ids.length > 0) throw new DomainError('not_implemented', 'target.vault_ids: vaults are not available in this deployment', { field: 'target.vault_ids' });
    if (dto.agent_id === undefined) throw fieldError('target.agent_id', 'is required for a new_session target');
    if (dto.input === undefined) throw fieldError('target.input', 'is required for a new_session target: 1–20 user messages');
    const parsed = parseAgentInput(dto.input);
    if (parsed.errors.length > 0) throw DomainError.validation([{ field: 'target.input', errors: parsed.errors.map((error) => error.replace(/^input/, 'target.input')) }]);
    checkInputText(dto.input, parsed.messages, this.config.maxInputTextBytes, 'target.input');
    const environment = dto.environment ?? { type: 'none' };
    const env = parseEnvironmentParam(environment, 'target.environment', { ceilings: this.config.sandbox.ceilings, allowFiles: true });
    if (env.unavailable) throw new DomainError('environment_unavailable', env.unavailable, { field: 'target.environment.type' });
    if (!env.param) throw DomainError.validation(env.errors);
    const metadata = dto.metadata === undefined || dto.metadata === null ? {} : checkMetadata(dto.metadata, 'target.metadata');
    const agent = await this.agents.getVisible(agentViewerOf(principal), dto.agent_id);
    await this.checkFiles(principal.userId, 'files' in env.param ? env.param.files : []);
    // Stored in the shape the view shows and the session parser reads again when a time fires.
    const input = parsed.messages.map((message) => ({ type: 'message', role: 'user', content: message.content }));
    return { target: { type: 'new_session', agent_id: agent.id, environment, input, metadata }, targetSessionId: null, agentId: agent.id };
  }

  /**
   * Each environment file one the caller may read now, as a session create checks them: a missing
   * one is refused here rather than failing every time the automation fires. (A draft can still
   * expire later: a fire then fails that invocation.)
   */
  private async checkFiles(ownerId: string, files: readonly { file_id: string }[]): Promise<void> {
    for (const [index, file] of files.entries()) {
      if (!(await this.files.findOwned(ownerId, file.file_id))) {
        throw new DomainError('not_found', `File ${file.file_id} not found (or its draft expired)`, { file_id: file.file_id, field: `target.environment.files[${index}].file_id` });
      }
    }
  }

  private async existingSession(principal: Principal, dto: AutomationTargetParamDto): Promise<CheckedTarget> {
    for (const field of ['agent_id', 'agent', 'environment', 'input', 'metadata', 'vault_ids'] as const) {
      if (dto[field] !== undefined && dto[field] !== null) throw fieldError(`target.${field}`, 'is a field of a new_session target');
    }
    if (dto.session_id === undefined) throw fieldError('target.session_id', 'is required for an existing_session target');
    if (dto.instructions === undefined) throw fieldError('target.instructions', 'is required for an existing_session target');
    if (dto.instructions.trim().length === 0) throw fieldError('target.instructions', 'must not be blank');
    // A string input's text is counted under the prefix itself: the field the bound names.
    checkInputText(dto.instructions, [{ role: 'user', content: [{ type: 'input_text', text: dto.instructions }] }], this.config.maxInputTextBytes, 'target.instructions');
    const session = await this.sessions.getVisible(principal.userId, dto.session_id);
    if (session.rootSessionId !== session.id) {
      throw new DomainError('state_conflict', `Session ${session.id} is a member of a cooperation tree: an automation targets its root (${session.rootSessionId})`, { field: 'target.session_id' });
    }
    return { target: { type: 'existing_session', session_id: session.id, instructions: dto.instructions }, targetSessionId: session.id, agentId: null };
  }
}
