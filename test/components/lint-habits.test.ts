import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';

// The size rules of `npm run lint` (eslint.config.js): at most 400 lines in a hand-written file and
// at most 8 constructor dependencies in a class. These cases lint made-up files with the project's
// own config, placed where the rules apply and where they do not.

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** The messages of `rule` for `code` as if it were the file `filePath`. */
async function messages(filePath: string, code: string, rule: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result.messages.filter((m) => m.ruleId === rule).map((m) => m.message);
}

/** `count` lines as `wc -l` counts them: each ends with a newline. */
const lines = (count: number): string => Array.from({ length: count }, (_, i) => `export const v${i} = ${i};\n`).join('');

/** A class whose constructor takes `count` injected dependencies. */
function classWith(count: number): string {
  const params = Array.from({ length: count }, (_, i) => `    private readonly d${i}: string,`).join('\n');
  return `export class Service {\n  constructor(\n${params}\n  ) {}\n}\n`;
}

describe('file size and constructor dependencies (npm run lint)', () => {
  it('reports a hand-written file of 401 lines, counted as wc -l counts them, and accepts 400', async () => {
    for (const file of ['libs/engine/src/x.ts', 'apps/api/src/x.ts', 'test/e2e/x.test.ts', 'scripts/lib/x.mjs', 'bench/lib/x.mjs']) {
      const over = await messages(file, lines(401), 'max-lines');
      assert.equal(over.length, 1, file);
      assert.match(over[0], /too many lines \(401\)\. Maximum allowed is 400/);
      assert.deepEqual(await messages(file, lines(400), 'max-lines'), [], file);
    }
  });

  it('counts blank lines and comments too', async () => {
    const code = `${lines(200)}${'\n'.repeat(100)}${'// why\n'.repeat(101)}`;
    assert.equal((await messages('libs/events/src/x.ts', code, 'max-lines')).length, 1);
  });

  it('leaves generated files and migrations alone', async () => {
    for (const file of ['libs/sdk/src/generated/x.ts', 'libs/database/src/migrations/1765934400000-x.ts']) {
      assert.deepEqual(await messages(file, lines(2000), 'max-lines'), [], file);
    }
  });

  it('reports a constructor with 9 dependencies, saying why, and accepts 8', async () => {
    for (const file of ['libs/agents/src/x.ts', 'apps/worker/src/x.ts', 'libs/config/src/x.ts']) {
      const over = await messages(file, classWith(9), 'no-restricted-syntax');
      assert.equal(over.length, 1, file);
      assert.match(over[0], /more than 8 dependencies: a class that needs that many does more than one thing; split it/);
      assert.deepEqual(await messages(file, classWith(8), 'no-restricted-syntax'), [], file);
    }
  });

  it('keeps the Redis rule where the constructor rule shares its selector list', async () => {
    const errors = await messages('libs/agents/src/x.ts', `import Redis from 'ioredis';\nexport const r = new Redis();\n${classWith(9)}`, 'no-restricted-syntax');
    assert.equal(errors.length, 2);
    assert.ok(errors.some((m) => /createRedisClient/.test(m)));
  });
});
