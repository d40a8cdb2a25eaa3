import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { env } from '../support/env.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const EXAMPLE = 'test/e2e/sdk-quick-start.example.ts';

// The README's SDK example is this compiled file, word for word, and it works.
describe('sdk: the README example', () => {
  it('is test/e2e/sdk-quick-start.example.ts, which type-checks with the build', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const section = /^## TypeScript SDK\b[\s\S]*?(?=^## )/m.exec(readme)?.[0] ?? '';
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(block, 'the README has a TypeScript SDK section with a ts example');
    assert.equal(block, readFileSync(path.join(ROOT, EXAMPLE), 'utf8'), `the README example differs from ${EXAMPLE}`);
  });

  it('creates a session, prints the streamed text and the turn status', () => {
    const run = spawnSync(process.execPath, [path.join(ROOT, 'dist', EXAMPLE.replace(/\.ts$/, '.js'))], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, AGENTS_URL: env.apiUrl, AGENTS_API_KEY: env.apiKey },
    });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, 'Echo: Hello from the SDK\ncompleted\n');
  });
});
