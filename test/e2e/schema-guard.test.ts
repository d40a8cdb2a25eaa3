import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { dataSourceOptions, knownMigrationNames, MIGRATIONS } from '#libs/database';
import { env } from '../support/env.js';

// A process of this build (api, worker, operator commands) refuses a database whose schema is not
// exactly this build's, before it writes anything; the migrations stay an explicit, idempotent step.
// Each case runs on a scratch database of the suite's Postgres, so the suite's own is untouched.

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPTS = {
  api: path.join(DIST, 'apps/api/src/main.js'),
  worker: path.join(DIST, 'apps/worker/src/main.js'),
  ops: path.join(DIST, 'apps/api/src/ops-cli.js'),
  migrate: path.join(DIST, 'libs/database/src/migrate.js'),
};
const LATEST = knownMigrationNames().at(-1)!;
/** Bound on a refused start (the refusal itself takes a connection and two queries). */
const EXIT_WITHIN_MS = 90_000;

/** A migration a later build could ship: run below by the real migrator, the way a newer build would. */
class FutureSchema9999999999999 implements MigrationInterface {
  name = 'FutureSchema9999999999999';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE future_feature (id uuid PRIMARY KEY)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE future_feature`);
  }
}

const scratch: string[] = [];

function admin<T>(run: (client: pg.Client) => Promise<T>, url = env.databaseUrl): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  return client.connect().then(() => run(client).finally(() => client.end()));
}

async function scratchDatabase(): Promise<string> {
  const name = `schema_guard_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  scratch.push(name);
  const url = new URL(env.databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Exit {
  code: number | null;
  output: string;
}

/** Starts a process of this build on `databaseUrl` and waits for it to exit (killed, and failed, past EXIT_WITHIN_MS). */
async function startAgainst(script: string, databaseUrl: string, args: string[] = []): Promise<Exit> {
  const child = spawn(process.execPath, [script, ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(await freePort()), WORKER_HEALTH_PORT: '0', LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ code: null, output: `${output}\n(still running after ${EXIT_WITHIN_MS} ms: killed)` });
    }, EXIT_WITHIN_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

function migrate(databaseUrl: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [SCRIPTS.migrate], { env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      if (code === -1) return reject(error as Error);
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** Everything a process could have written: each table's rows, as one comparable snapshot. */
async function snapshot(databaseUrl: string): Promise<Record<string, number>> {
  return admin(async (client) => {
    const tables = (await client.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)).rows as { tablename: string }[];
    const counts: Record<string, number> = {};
    for (const { tablename } of tables) counts[tablename] = Number((await client.query(`SELECT count(*)::int AS n FROM "${tablename}"`)).rows[0].n);
    return counts;
  }, databaseUrl);
}

before(() => {
  assert.ok(process.env.BOOTSTRAP_API_KEY, 'the suite\'s api writes its bootstrap key at start: what a refused start must not do');
});

after(async () => {
  for (const name of scratch) await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
});

describe('schema version guard', () => {
  it('migrations are explicit and idempotent: a second run applies nothing', async () => {
    const url = await scratchDatabase();
    const first = await migrate(url);
    assert.equal(first.code, 0, first.output);
    assert.match(first.output, new RegExp(`migration applied: ${LATEST}`));
    const before = await snapshot(url);
    const second = await migrate(url);
    assert.equal(second.code, 0, second.output);
    assert.doesNotMatch(second.output, /migration applied/);
    assert.deepEqual(await snapshot(url), before, 'the second run changed nothing');
  });

  it('a database migrated by a newer build: api, worker and operator commands refuse to start, name both versions and write nothing', async () => {
    const url = await scratchDatabase();
    assert.equal((await migrate(url)).code, 0);
    // The real migrator runs this build's migrations and one it does not know, as a newer build would.
    const newer = new DataSource({ ...dataSourceOptions(url, 1), logging: ['error'], migrations: [...MIGRATIONS, FutureSchema9999999999999] });
    await newer.initialize();
    try {
      const applied = await newer.runMigrations({ transaction: 'each' });
      assert.deepEqual(
        applied.map((migration) => migration.name),
        ['FutureSchema9999999999999'],
      );
    } finally {
      await newer.destroy();
    }
    const before = await snapshot(url);
    assert.equal(before.api_keys, 0, 'no key yet: the bootstrap key would be the api\'s first write');

    const expected = `database schema is at migration FutureSchema9999999999999, this build knows up to ${LATEST}`;
    for (const [name, script] of [
      ['api', SCRIPTS.api],
      ['worker', SCRIPTS.worker],
    ] as const) {
      const exit = await startAgainst(script, url);
      assert.notEqual(exit.code, 0, `${name}: ${exit.output}`);
      assert.notEqual(exit.code, null, `${name} exits: ${exit.output}`);
      assert.ok(exit.output.includes(expected), `${name} names both versions: ${exit.output}`);
    }
    const ops = await startAgainst(SCRIPTS.ops, url, ['unpause', '01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9e']);
    assert.equal(ops.code, 1, ops.output);
    assert.equal(JSON.parse(ops.output.slice(ops.output.indexOf('{'))).error.code, 'schema_version_mismatch', ops.output);
    assert.ok(ops.output.includes(expected), ops.output);

    // The migrator of this build refuses it too, rather than run beside a schema it does not know.
    const migrated = await migrate(url);
    assert.equal(migrated.code, 1, migrated.output);
    assert.ok(migrated.output.includes(expected), migrated.output);

    assert.deepEqual(await snapshot(url), before, 'nothing was written');
  });

  it('an empty database, or one this application did not create: refused with what to do, nothing written', async () => {
    const empty = await scratchDatabase();
    const exit = await startAgainst(SCRIPTS.api, empty);
    assert.notEqual(exit.code, 0, exit.output);
    assert.notEqual(exit.code, null, exit.output);
    assert.ok(exit.output.includes(`database schema is empty (no migration applied), this build knows up to ${LATEST}`), exit.output);
    assert.match(exit.output, /run the migrations of this build first/);
    assert.deepEqual(await snapshot(empty), {}, 'no table was created');

    const foreign = await scratchDatabase();
    await admin((client) => client.query(`CREATE TABLE someone_elses (id int)`), foreign);
    const refused = await startAgainst(SCRIPTS.api, foreign);
    assert.notEqual(refused.code, 0, refused.output);
    assert.notEqual(refused.code, null, refused.output);
    assert.ok(refused.output.includes('database schema is not a known baseline'), refused.output);
    assert.ok(refused.output.includes(`this build knows migrations up to ${LATEST}`), refused.output);
    const migrated = await migrate(foreign);
    assert.equal(migrated.code, 1, migrated.output);
    assert.deepEqual(await snapshot(foreign), { someone_elses: 0 }, 'nothing was written');
  });
});
