import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '#libs/database';
import { AUTOMATION_MACHINE } from '#libs/automations';
import { FILE_MACHINE } from '#libs/files';
import { ATTACHMENT_MACHINE, COOPERATION_SIGNAL_MACHINE, INPUT_MACHINE, INPUT_MODE_MACHINE, ITEM_MACHINE, RUN_MACHINE, STEP_MACHINE, TURN_MACHINE, WAITPOINT_KINDS } from '#libs/engine';
import { WEBHOOK_DELIVERY_MACHINE, WEBHOOK_DISABLED_REASON_MACHINE } from '#libs/webhooks';
import { env } from '../support/env.js';

// Every stored state machine (defineMachine) against the database the migrations built: each status
// column has a validated CHECK that allows exactly the machine's states, and the migration that
// added the missing CHECKs converges when it runs again.

const STORED = [TURN_MACHINE, RUN_MACHINE, STEP_MACHINE, ITEM_MACHINE, INPUT_MACHINE, INPUT_MODE_MACHINE, ATTACHMENT_MACHINE, FILE_MACHINE, WEBHOOK_DELIVERY_MACHINE, WEBHOOK_DISABLED_REASON_MACHINE, COOPERATION_SIGNAL_MACHINE, AUTOMATION_MACHINE];

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** The constraint's definition as Postgres shows it, and whether it is validated; null when the table has none of that name. */
async function constraint(client: pg.Client, table: string, name: string): Promise<{ def: string; validated: boolean } | null> {
  const { rows } = await client.query<{ def: string; validated: boolean }>(
    `SELECT pg_get_constraintdef(c.oid) AS def, c.convalidated AS validated FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
     WHERE t.relname = $1 AND c.conname = $2 AND t.relnamespace = current_schema()::regnamespace`,
    [table, name],
  );
  return rows[0] ?? null;
}

const literals = (def: string): string[] => [...def.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);

const scratch: string[] = [];
after(async () => {
  for (const name of scratch) await withClient(env.databaseUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
});

describe('the database holds every status column to its declared machine', () => {
  for (const machine of STORED) {
    it(`${machine.table}.${machine.column}: a validated CHECK allows exactly the declared states`, async () => {
      const found = await withClient(env.databaseUrl, (client) => constraint(client, machine.table!, machine.constraint!));
      assert.ok(found, `${machine.table} has the constraint ${machine.constraint}`);
      assert.ok(found.validated, `${machine.constraint} is validated`);
      assert.match(found.def, new RegExp(`\\b${machine.column}\\b`));
      assert.deepEqual(literals(found.def).sort(), [...machine.states].sort());
    });
  }

  it('turns.waitpoint: a validated CHECK allows exactly the waitpoint kinds', async () => {
    const found = await withClient(env.databaseUrl, (client) => constraint(client, 'turns', 'turns_waitpoint_kind_check'));
    assert.ok(found?.validated);
    assert.deepEqual(literals(found.def).filter((word) => word !== 'kind').sort(), [...WAITPOINT_KINDS].sort());
  });

  it('the status CHECKs migration converges when it runs again on a migrated database', async () => {
    const name = `schema_states_${randomBytes(6).toString('hex')}`;
    await withClient(env.databaseUrl, (client) => client.query(`CREATE DATABASE ${name}`));
    scratch.push(name);
    const url = new URL(env.databaseUrl);
    url.pathname = `/${name}`;
    const dataSource = new DataSource({ ...dataSourceOptions(url.toString(), 1), logging: ['error'] });
    await dataSource.initialize();
    try {
      await dataSource.runMigrations({ transaction: 'each' });
      const StatusChecks = MIGRATIONS.find((migration) => migration.name === 'StatusChecks1766801700000')!;
      const runner = dataSource.createQueryRunner();
      try {
        await new StatusChecks().up(runner);
      } finally {
        await runner.release();
      }
      const found = await withClient(url.toString(), (client) => constraint(client, 'cooperation_signals', COOPERATION_SIGNAL_MACHINE.constraint!));
      assert.ok(found?.validated);
      assert.deepEqual(literals(found.def).sort(), [...COOPERATION_SIGNAL_MACHINE.states].sort());
    } finally {
      await dataSource.destroy();
    }
  });
});
