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

/** A table's rows: how many, and a hash of their text, so that an UPDATE shows as well as an INSERT or DELETE. */
interface TableRows {
  rows: number;
  md5: string;
}

/** Everything a process could have written: each table's rows (of the schema it creates tables in), as one comparable snapshot. */
async function snapshot(databaseUrl: string): Promise<Record<string, TableRows>> {
  return admin(async (client) => {
    const tables = (await client.query(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)).rows as { tablename: string }[];
    const snap: Record<string, TableRows> = {};
    for (const { tablename } of tables) {
      const row = (await client.query(`SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) AS md5 FROM "${tablename}" t`)).rows[0] as { n: number; md5: string };
      snap[tablename] = { rows: row.n, md5: row.md5 };
    }
    return snap;
  }, databaseUrl);
}

/** Starts the api of this build on `databaseUrl` and waits (bounded) until it answers /health, then stops it. */
async function startsAndAnswers(databaseUrl: string): Promise<{ healthy: boolean; output: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [SCRIPTS.api], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let healthy = false;
  // Bounded: 300 polls of at most 1 s each, 200 ms apart; a process that exits ends the wait.
  for (let poll = 0; poll < 300 && !healthy && child.exitCode === null && child.signalCode === null; poll += 1) {
    healthy = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1_000) }).then((res) => res.ok, () => false);
    if (!healthy) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGTERM');
  await exited;
  return { healthy, output };
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
    assert.equal(before.api_keys!.rows, 0, 'no key yet: the bootstrap key would be the api\'s first write');

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
    assert.deepEqual(Object.keys(await snapshot(foreign)), ['someone_elses'], 'nothing was written');
    assert.deepEqual((await snapshot(foreign)).someone_elses, { rows: 0, md5: 'd41d8cd98f00b204e9800998ecf8427e' });
  });

  it('the snapshot that proves "nothing written" sees an UPDATE, not only rows added or removed', async () => {
    const url = await scratchDatabase();
    await admin(async (client) => {
      await client.query(`CREATE TABLE counted (id int PRIMARY KEY, value text)`);
      await client.query(`INSERT INTO counted VALUES (1, 'a')`);
    }, url);
    const before = await snapshot(url);
    await admin((client) => client.query(`UPDATE counted SET value = 'b' WHERE id = 1`), url);
    const after = await snapshot(url);
    assert.equal(after.counted!.rows, before.counted!.rows);
    assert.notDeepEqual(after, before);
  });

  it('a database whose search_path names a schema other than public: migrated there, and the api starts on it', async () => {
    const url = await scratchDatabase();
    const name = new URL(url).pathname.slice(1);
    await admin(async (client) => {
      await client.query(`CREATE SCHEMA app`);
      await client.query(`ALTER DATABASE ${name} SET search_path = app`);
    }, url);
    const first = await migrate(url);
    assert.equal(first.code, 0, first.output);
    assert.match(first.output, new RegExp(`migration applied: ${LATEST}`));
    const where = await admin(async (client) => (await client.query(`SELECT to_regclass('app.sessions') IS NOT NULL AS app, (SELECT count(*)::int FROM pg_tables WHERE schemaname = 'public') AS public_tables`)).rows[0] as { app: boolean; public_tables: number }, url);
    assert.deepEqual(where, { app: true, public_tables: 0 }, 'the tables are in the search_path\'s schema');
    const second = await migrate(url);
    assert.equal(second.code, 0, second.output);
    assert.doesNotMatch(second.output, /migration applied/, 'the migrator finds its own record there');
    const api = await startsAndAnswers(url);
    assert.ok(api.healthy, `the api starts on it: ${api.output.slice(-3000)}`);
  });

  it('a fresh database holding only a table an extension owns (as PostGIS\'s spatial_ref_sys) is empty to the migrator, which migrates it', async () => {
    const url = await scratchDatabase();
    // No extension shipped with this Postgres creates a table, so one is made a member of an
    // extension the way an extension's own script makes its tables members.
    await admin(async (client) => {
      await client.query(`CREATE EXTENSION hstore`);
      await client.query(`CREATE TABLE spatial_ref_sys (srid int PRIMARY KEY)`);
      await client.query(`ALTER EXTENSION hstore ADD TABLE spatial_ref_sys`);
    }, url);
    const exit = await startAgainst(SCRIPTS.api, url);
    assert.ok(exit.output.includes('database schema is empty (no migration applied)'), exit.output);
    const migrated = await migrate(url);
    assert.equal(migrated.code, 0, migrated.output);
    assert.match(migrated.output, new RegExp(`migration applied: ${LATEST}`));
  });
});
