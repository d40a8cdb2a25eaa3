import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The version history of saved agents: every version a create or replace makes, with the whole
 * definition as written (a valid PUT body), who wrote it and when. Written in the transaction of
 * the create or replace itself; an unchanged definition (AGENTS_FILE at start) writes nothing.
 * The primary key (agent_id, version) is also the history's page order.
 *
 * The agents that exist already get their current version, from their row: their earlier
 * versions were never kept, and who wrote the current one is unknown (actor_id null).
 */
export class AgentVersions1766193600000 implements MigrationInterface {
  name = 'AgentVersions1766193600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agent_versions (
        agent_id varchar NOT NULL REFERENCES agents (id),
        version integer NOT NULL,
        definition jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        actor_id uuid REFERENCES users (id),
        PRIMARY KEY (agent_id, version)
      )`);
    await q.query(`
      INSERT INTO agent_versions (agent_id, version, definition, created_at, actor_id)
      SELECT id, version,
             jsonb_build_object(
               'name', name, 'description', description, 'instructions', instructions, 'model', model,
               'tools', tools, 'tool_approval_mode', tool_approval_mode, 'limits', limits, 'context', context,
               'multi_agent', multi_agent, 'visibility', visibility),
             updated_at, NULL
      FROM agents`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agent_versions`);
  }
}
