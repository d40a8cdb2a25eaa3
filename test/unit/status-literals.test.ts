import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { AUTOMATION_MACHINE } from '#libs/automations';
import { FILE_MACHINE } from '#libs/files';
import { ATTACHMENT_MACHINE, COOPERATION_SIGNAL_MACHINE, INPUT_MACHINE, INPUT_MODE_MACHINE, ITEM_MACHINE, RUN_MACHINE, STEP_MACHINE, TURN_MACHINE, WAITPOINT_KINDS } from '#libs/engine';
import { WEBHOOK_DELIVERY_MACHINE, WEBHOOK_DISABLED_REASON_MACHINE } from '#libs/webhooks';
import { statusLiterals, templates } from '../support/sql-status-scan.js';

// The reverse state test: every status literal the SQL of libs/ and apps/ writes or compares must be
// a state the machine of its table and column declares (defineMachine). A new status written
// without a declaration fails here, with its file and line. Migrations are history (their CHECKs
// are held to the machines by test/e2e/schema-states.test.ts); the SDK and the console hold no SQL.

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** `table.column` → the states its machine declares. */
const DECLARED = new Map<string, readonly string[]>(
  [TURN_MACHINE, RUN_MACHINE, STEP_MACHINE, ITEM_MACHINE, INPUT_MACHINE, INPUT_MODE_MACHINE, ATTACHMENT_MACHINE, FILE_MACHINE, WEBHOOK_DELIVERY_MACHINE, WEBHOOK_DISABLED_REASON_MACHINE, COOPERATION_SIGNAL_MACHINE, AUTOMATION_MACHINE]
    .map((machine): [string, readonly string[]] => [`${machine.table}.${machine.column}`, machine.states]),
);
DECLARED.set('turns.waitpoint.kind', WAITPOINT_KINDS);
const TABLES = new Set([...DECLARED.keys()].map((key) => key.split('.')[0]));
const COLUMNS = [...new Set([...DECLARED.keys()].map((key) => key.split('.').slice(1).join('.')))].filter((column) => !column.includes('.'));

function sourceFiles(): string[] {
  const files: string[] = [];
  for (const top of ['libs', 'apps']) {
    for (const entry of readdirSync(path.join(ROOT, top), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const file = path.relative(ROOT, path.join(entry.parentPath, entry.name));
      if (/^libs\/database\/src\/migrations\/|^libs\/sdk\/|^apps\/console\//.test(file)) continue;
      files.push(file);
    }
  }
  return files;
}

/** What is wrong with each literal of one source: undeclared by its table's machine (or by every machine of its column, when the statement does not tell the table). */
function undeclared(file: string, source: string): string[] {
  return statusLiterals(source, COLUMNS, TABLES).flatMap((literal) => {
    const key = `${literal.table}.${literal.column}`;
    const states = literal.table === null ? [...DECLARED].filter(([k]) => k.endsWith(`.${literal.column}`)).flatMap(([, s]) => s) : DECLARED.get(key);
    if (states === undefined || states.length === 0 || states.includes(literal.value)) return [];
    const owner = literal.table === null ? `any machine of column ${literal.column}` : `the ${key} machine`;
    return [`${file}:${literal.line}: '${literal.value}' is not declared by ${owner} (${literal.text.trim()})`];
  });
}

describe('every status literal written in SQL is declared by its machine', () => {
  it('scans libs/ and apps/ and finds no undeclared status', () => {
    const files = sourceFiles();
    assert.ok(files.length > 100, 'the scan found the sources');
    const problems = files.flatMap((file) => undeclared(file, readFileSync(path.join(ROOT, file), 'utf8')));
    assert.deepEqual(problems, []);
  });

  it('the scan sees the literals it is meant to see (so an empty result means something)', () => {
    const files = sourceFiles();
    const seen = files.flatMap((file) => statusLiterals(readFileSync(path.join(ROOT, file), 'utf8'), COLUMNS, TABLES));
    const tables = new Set(seen.map((literal) => `${literal.table}.${literal.column}`));
    for (const key of ['files.status', 'inputs.status', 'webhook_deliveries.status', 'inputs.attachment_status', 'turns.status', 'runs.status', 'turns.waitpoint.kind']) {
      assert.ok(tables.has(key), `the scan found literals of ${key}`);
    }
  });

  it('an undeclared literal fails with its file and line, whichever form writes it', () => {
    const source = [
      'const a = 1;',
      "const sql = `UPDATE files f SET status = 'archived' WHERE f.id = $1 AND f.status IN ('draft', 'shredded')`;",
      "const ins = `INSERT INTO cooperation_signals (parent_session_id, member_session_id, turn_id, status) SELECT p, id, NULL, 'woken' FROM sessions`;",
      "const json = `SELECT 1 FROM sessions s WHERE s.current_turn->>'status' = 'paused'`;",
      "const nested = `SELECT 1 FROM runs r WHERE ${flag ? `r.status = 'parked'` : 'true'}`;",
    ].join('\n');
    assert.deepEqual(
      undeclared('x.ts', source).map((problem) => problem.split(' is not')[0]),
      ["x.ts:2: 'archived'", "x.ts:2: 'shredded'", "x.ts:3: 'woken'", "x.ts:4: 'paused'", "x.ts:5: 'parked'"],
    );
  });

  it('reads template literals past comments, quotes and nested templates', () => {
    const found = templates("// `not sql`\nconst s = 'a `quote`';\nconst t = `outer ${`inner`} end`;").map((t) => t.text);
    assert.deepEqual(found.sort(), ['inner', 'outer $X end']);
  });
});
