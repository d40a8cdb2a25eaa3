import { readFileSync } from 'node:fs';
import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { parse as parseYaml } from 'yaml';
import { AppConfig } from '#libs/config';
import { AgentAdmin } from './agent-admin.js';
import { AgentsService } from './agents.service.js';

/**
 * Agents declared in AGENTS_FILE (JSON or YAML: a list of definitions with `id`, or `{agents: [...]}`)
 * are created or replaced at start, in the api only. An unchanged definition is left alone, so a
 * restart bumps no version; an invalid file stops the start with every problem listed.
 */
@Injectable()
export class AgentsFile implements OnApplicationBootstrap {
  private readonly logger = new Logger(AgentsFile.name);

  constructor(
    private readonly config: AppConfig,
    private readonly admin: AgentAdmin,
    private readonly agents: AgentsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const file = this.config.agentsFile;
    if (!file) return;
    const text = readFileSync(file, 'utf8');
    const parsed: unknown = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
    const entries = Array.isArray(parsed) ? parsed : (parsed as { agents?: unknown } | null)?.agents;
    if (!Array.isArray(entries)) throw new Error(`AGENTS_FILE ${file} must hold a list of agents or {agents: [...]}`);
    let changed = 0;
    for (const [index, entry] of entries.entries()) {
      const id = (entry as { id?: unknown } | null)?.id;
      if (typeof id !== 'string') throw new Error(`AGENTS_FILE ${file}: agents[${index}].id is required`);
      const definition = this.admin.validate(id, entry);
      if (definition.visibility === 'private') throw new Error(`AGENTS_FILE ${file}: agent ${id} cannot be private (file agents have no owner)`);
      const result = await this.agents.put(null, id, definition, { unlessUnchanged: true });
      if (result.changed) changed += 1;
    }
    this.logger.log(`AGENTS_FILE ${file}: ${entries.length} agents, ${changed} created or replaced`);
  }
}
