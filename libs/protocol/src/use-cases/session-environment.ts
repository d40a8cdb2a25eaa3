import { Injectable } from '@nestjs/common';
import { type AgentEntity, type EnvironmentParam, parseEnvironmentParam, resolveEnvironment } from '#libs/agents';
import { AppConfig } from '#libs/config';
import type { EnvironmentConfig } from '#libs/environments';
import { DomainError } from '#libs/errors';
import { FilesRepository } from '#libs/files';
import type { EntityManager } from 'typeorm';

/**
 * The environment a new session stores: its `environment` param over its agent's default
 * (resolveEnvironment says how), checked against what this deployment offers. Reads the database
 * only for the param's `files` (checkFiles), so a session without them costs what it always did.
 */
@Injectable()
export class SessionEnvironment {
  constructor(
    private readonly config: AppConfig,
    private readonly files: FilesRepository,
  ) {}

  async resolve(agent: AgentEntity, raw: Record<string, unknown> | undefined): Promise<EnvironmentConfig | null> {
    const param = raw === undefined ? undefined : this.parse(raw);
    const { environment, loosened } = resolveEnvironment(agent.environment, param, this.config.sandbox);
    if (environment === null) return null;
    if (this.config.sandbox.runtime === 'none') {
      const whose = param === undefined ? `agent ${agent.id}'s default environment` : 'an `openai_hosted` environment';
      throw new DomainError('environment_unavailable', `This deployment runs no sandbox (SANDBOX_RUNTIME=none): it cannot host ${whose}; send {"type": "none"}`);
    }
    if (loosened.length > 0) {
      throw new DomainError('environment_loosened', `The environment asks for more than agent ${agent.id}'s allows: ${loosened[0].field} ${loosened[0].errors[0]}`, { fields: loosened });
    }
    return environment;
  }

  /**
   * Each file of the environment must be one the caller may read (an upload of theirs, draft or
   * attached): else 404, as for attachments. Called in the accepting transaction, so that a replay
   * of the create answers as the first one did even when a draft has expired since.
   */
  async checkFiles(manager: EntityManager, ownerId: string, environment: EnvironmentConfig | null): Promise<void> {
    for (const [index, file] of (environment?.files ?? []).entries()) {
      if (!(await this.files.findOwned(ownerId, file.file_id, manager))) {
        throw new DomainError('not_found', `File ${file.file_id} not found (or its draft expired)`, { file_id: file.file_id, field: `environment.files[${index}].file_id` });
      }
    }
  }

  private parse(raw: Record<string, unknown>): EnvironmentParam {
    const parsed = parseEnvironmentParam(raw, 'environment', { ceilings: this.config.sandbox.ceilings, allowFiles: true });
    if (parsed.unavailable) throw new DomainError('environment_unavailable', parsed.unavailable, { field: 'environment.type' });
    if (!parsed.param) throw DomainError.validation(parsed.errors);
    return parsed.param;
  }
}
