// The cost of an echo turn, held to bench/budget.json: SQL statements, write transactions and Redis
// commands per turn, counted (not timed) on a stack of its own, so that the suite's other traffic
// is not in the counts. A change that adds a round trip to every turn fails here, however small
// its share of a timed benchmark would be. The counting itself is bench/lib/budget.mjs, which the
// `budget` bench scenario reports with CPU per process.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { type BudgetStack, startBudgetStack } from '../support/budget-stack.js';
import { loadFromRoot as load, ROOT } from '../support/stack-scripts.js';


interface Measured {
  turns: number;
  statements_per_turn: number;
  transactions_per_turn: number;
  wal_bytes_per_turn: number;
  redis_commands_per_turn: number;
  statements: { per_turn: number; query: string }[];
  redis_commands: { command: string; per_turn: number }[];
}
type Limits = Record<'statements_per_turn' | 'transactions_per_turn' | 'redis_commands_per_turn', number>;

let stack: BudgetStack;
let measured: Measured;
let limits: Limits;

before(async () => {
  stack = await startBudgetStack('budget');
  const apiKey = stack.apiKey;
  const { Client } = await load<{ Client: new (url: string, key: string) => object }>('bench/lib/client.mjs');
  const budget = await load<{ measureTurnBudget(options: object): Promise<Measured>; readBudget(file: string): { per_echo_turn: Limits } }>('bench/lib/budget.mjs');
  limits = budget.readBudget(path.join(ROOT, 'bench', 'budget.json')).per_echo_turn;
  const pids = Object.fromEntries(stack.children.map((child) => [child.name, child.pid]));
  measured = await budget.measureTurnBudget({ client: new Client(stack.url, apiKey), databaseUrl: stack.env.DATABASE_URL, redisUrl: stack.env.REDIS_URL, pids, turns: 60, sessions: 4 });
});

after(async () => {
  await stack?.stop();
});

/** What to read when a budget fails: the statements and commands per turn, largest first. */
function breakdown(): string {
  const statements = measured.statements.slice(0, 25).map((s) => `  ${s.per_turn.toFixed(2)}  ${s.query}`);
  const commands = measured.redis_commands.slice(0, 25).map((c) => `  ${c.per_turn.toFixed(2)}  ${c.command}`);
  return ['statements per turn:', ...statements, 'Redis commands per turn:', ...commands].join('\n');
}

test('an echo turn (its submit included) stays within the SQL statement budget', (t) => {
  t.diagnostic(`per echo turn: ${measured.statements_per_turn} statements, ${measured.transactions_per_turn} write transactions, ${measured.wal_bytes_per_turn} WAL bytes, ${measured.redis_commands_per_turn} Redis commands (budget: ${JSON.stringify(limits)})`);
  // Every turn runs statements: a zero would mean the counting is broken, not that the turn is free.
  assert.ok(measured.statements_per_turn > 1, `counted ${measured.statements_per_turn} statements per turn`);
  assert.ok(measured.statements_per_turn <= limits.statements_per_turn, `${measured.statements_per_turn} statements per turn > budget ${limits.statements_per_turn}\n${breakdown()}`);
});

test('an echo turn stays within the write-transaction budget', () => {
  assert.ok(measured.transactions_per_turn >= 1, `counted ${measured.transactions_per_turn} write transactions per turn`);
  assert.ok(measured.transactions_per_turn <= limits.transactions_per_turn, `${measured.transactions_per_turn} write transactions per turn > budget ${limits.transactions_per_turn}\n${breakdown()}`);
});

test('an echo turn stays within the Redis command budget', () => {
  assert.ok(measured.redis_commands_per_turn > 1, `counted ${measured.redis_commands_per_turn} Redis commands per turn`);
  assert.ok(measured.redis_commands_per_turn <= limits.redis_commands_per_turn, `${measured.redis_commands_per_turn} Redis commands per turn > budget ${limits.redis_commands_per_turn}\n${breakdown()}`);
});
