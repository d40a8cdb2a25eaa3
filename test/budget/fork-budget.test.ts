// The cost of a fork, held to bench/budget.json: a fork shares its source's history by reference
// (README "Fork"), so forking a session of 10 items and one of 100 must take the same SQL
// statements and write the same rows, none of them items or turns. Counted (not timed) on a stack
// of its own, as the turn budget is: the counting is bench/lib/fork-scenarios.mjs, which the `fork`
// bench scenario reports for 10, 1,000 and 10,000 items.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { type BudgetStack, startBudgetStack } from '../support/budget-stack.js';
import { loadFromRoot as load, ROOT } from '../support/stack-scripts.js';

interface ForkCost {
  forks: number;
  fork_ids: string[];
  statements_per_fork: number;
  rows_per_fork: number;
  transactions_per_fork: number;
  statements_range: [number, number];
  rows_range: [number, number];
  rows_by_table: Record<string, number>;
  statements: { calls: number; query: string }[];
}
interface ForkScenarios {
  seedSession(client: object, items: number): Promise<{ id: string }>;
  forkSession(client: object, sessionId: string, body?: object): Promise<{ status: number; body: { id: string } }>;
  measureForks(db: pg.Client, forkOnce: (i: number) => Promise<{ status: number; body: { id: string } }>, count: number, options: { settled: (id: string) => Promise<void> }): Promise<ForkCost>;
  streamPublished(redisUrl: string): ((id: string) => Promise<void>) & { close(): void };
  ownItems(db: pg.Client, sessionId: string): Promise<number>;
  statementsPerTurn(db: pg.Client, client: object, sessionIds: string[], turns: number): Promise<TurnCost>;
}
interface TurnCost {
  per_turn: number;
  statements: { per_turn: number; query: string }[];
}
type Limits = Record<'statements_per_fork' | 'rows_per_fork', number>;

const FORKS = 6;

let stack: BudgetStack;
let db: pg.Client;
let limits: Limits;
const measured: Record<'small' | 'large', ForkCost> = {} as never;
const turns: Record<'source' | 'fork', TurnCost> = {} as never;
let turnLimit: number;
let forks: ForkScenarios;

before(async () => {
  stack = await startBudgetStack('fork-budget');
  const apiKey = stack.apiKey;
  const { Client } = await load<{ Client: new (url: string, key: string) => object }>('bench/lib/client.mjs');
  forks = await load<ForkScenarios>('bench/lib/fork-scenarios.mjs');
  const budget = JSON.parse(readFileSync(path.join(ROOT, 'bench', 'budget.json'), 'utf8'));
  limits = budget.per_fork;
  turnLimit = budget.per_echo_turn.statements_per_turn;
  const client = new Client(stack.url, apiKey);
  db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  const small = await forks.seedSession(client, 10);
  const large = await forks.seedSession(client, 100);
  // Warm-up: the first fork prepares statements and fills the api's caches.
  for (const source of [small, large]) assert.equal((await forks.forkSession(client, source.id)).status, 201);
  const settled = forks.streamPublished(stack.env.REDIS_URL);
  try {
    measured.small = await forks.measureForks(db, () => forks.forkSession(client, small.id), FORKS, { settled });
    measured.large = await forks.measureForks(db, () => forks.forkSession(client, large.id), FORKS, { settled });
  } finally {
    settled.close();
  }
  // Echo turns on four forks of the 100-item source (each inherits its 100 items), and on four sessions
  // that are no fork (the two sources and two of 10 items), round robin: three other turns run before
  // a session gets its next message, so it has released its turn (a message to a session still
  // holding it takes the queue's statements, which a 2-session rotation met once under load).
  const forked = [];
  for (let i = 0; i < 4; i += 1) forked.push((await forks.forkSession(client, large.id)).body.id);
  const plain = [large.id, small.id, (await forks.seedSession(client, 10)).id, (await forks.seedSession(client, 10)).id];
  turns.fork = await forks.statementsPerTurn(db, client, forked, 20);
  turns.source = await forks.statementsPerTurn(db, client, plain, 20);
});

after(async () => {
  await db?.end();
  await stack?.stop();
});

/** What to read when a count differs: each size's statements and rows of its median fork. */
function breakdown(): string {
  return (['small', 'large'] as const)
    .map((size) => {
      const m = measured[size];
      const statements = m.statements.map((s) => `  ${s.calls}  ${s.query}`);
      return [`${size}: ${m.statements_per_fork} statements (range ${m.statements_range.join('–')}), rows ${JSON.stringify(m.rows_by_table)} (range ${m.rows_range.join('–')})`, ...statements].join('\n');
    })
    .join('\n');
}

test('a fork takes as many SQL statements for a 100-item session as for a 10-item one, within the budget', (t) => {
  t.diagnostic(`per fork: ${measured.small.statements_per_fork} / ${measured.large.statements_per_fork} statements, ${measured.small.rows_per_fork} / ${measured.large.rows_per_fork} rows, ${measured.small.transactions_per_fork} write transactions (budget: ${JSON.stringify(limits)})`);
  // Every fork runs statements: a zero would mean the counting is broken, not that the fork is free.
  assert.ok(measured.small.statements_per_fork > 1, `counted ${measured.small.statements_per_fork} statements per fork\n${breakdown()}`);
  assert.equal(measured.large.statements_per_fork, measured.small.statements_per_fork, `statements grow with the history\n${breakdown()}`);
  assert.ok(measured.small.statements_per_fork <= limits.statements_per_fork, `${measured.small.statements_per_fork} statements per fork > budget ${limits.statements_per_fork}\n${breakdown()}`);
});

test('a fork writes the same rows, table by table, for a 100-item session as for a 10-item one, within the budget', () => {
  assert.ok(measured.small.rows_by_table.sessions >= 1, `the fork's session row is counted\n${breakdown()}`);
  assert.deepEqual(measured.large.rows_by_table, measured.small.rows_by_table, `rows written grow with the history\n${breakdown()}`);
  assert.ok(measured.small.rows_per_fork <= limits.rows_per_fork, `${measured.small.rows_per_fork} rows per fork > budget ${limits.rows_per_fork}\n${breakdown()}`);
});

test('a fork copies nothing of the history: no item, turn or run rows, and none of its own items', async () => {
  for (const table of ['items', 'turns', 'runs', 'steps']) {
    assert.equal(measured.large.rows_by_table[table], undefined, `${table} written by a fork\n${breakdown()}`);
  }
  for (const id of [...measured.small.fork_ids, ...measured.large.fork_ids]) assert.equal(await forks.ownItems(db, id), 0);
});

test('an echo turn on a fork takes the statements it takes on a session that is no fork, within the turn budget', (t) => {
  const list = (cost: TurnCost) => cost.statements.map((s) => `  ${s.per_turn.toFixed(2)}  ${s.query}`).join('\n');
  t.diagnostic(`per echo turn: source ${turns.source.per_turn}, fork ${turns.fork.per_turn} statements`);
  // Sequential echo turns cost a whole number of statements, give or take a timing-driven read (bench/budget.json).
  assert.ok(Math.abs(turns.fork.per_turn - turns.source.per_turn) <= 0.5, `fork ${turns.fork.per_turn} vs source ${turns.source.per_turn}\nfork:\n${list(turns.fork)}\nsource:\n${list(turns.source)}`);
  assert.ok(turns.fork.per_turn <= turnLimit, `${turns.fork.per_turn} statements per turn on a fork > budget ${turnLimit}\n${list(turns.fork)}`);
});
