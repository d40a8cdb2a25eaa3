import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { envExampleNames, read, ROOT } from '../support/docker-files.js';

// Every setting the apps read is documented: docker/.env.example and the README's Configuration
// table. Reads files only; it needs no stack.

function tsFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => path.join(dir, file));
}

/** What libs/config reads (`env.X`, `env['X']`, `helper(env, 'X'`) plus any `process.env.X` in apps/ and libs/. */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  // AppConfig and the files it reads settings with (libs/config/src): every one of them.
  for (const file of tsFiles(path.join('libs', 'config', 'src'))) {
    const config = read(file);
    for (const pattern of [/\benv\.([A-Z][A-Z0-9_]*)\b/g, /\benv\[['"]([A-Z][A-Z0-9_]*)['"]\]/g, /\(\s*env\s*,\s*['"]([A-Z][A-Z0-9_]*)['"]/g]) {
      for (const match of config.matchAll(pattern)) names.add(match[1]);
    }
  }
  for (const file of [...tsFiles('apps'), ...tsFiles('libs')]) {
    for (const match of read(file).matchAll(/\bprocess\.env(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)) names.add(match[1] ?? match[2]);
  }
  // Set by the images or Node itself, not settings of this application.
  for (const name of ['NODE_ENV', 'NODE_OPTIONS']) names.delete(name);
  return names;
}

/** Every `VAR` in the first cell of the README's Configuration table. */
function readmeConfigNames(): Set<string> {
  const readme = read('README.md');
  const section = /^## Configuration\b[\s\S]*?(?=^## )/m.exec(readme)?.[0] ?? '';
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const firstCell = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const match of firstCell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(match[1]);
  }
  return names;
}

describe('settings documentation', () => {
  const used = variablesRead();

  it('finds what the apps read', () => {
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'API_KEY_HASH_SECRET', 'PORT', 'WORKER_HEALTH_PORT', 'JWT_SECRET', 'OPENAI_API_KEY']) assert.ok(used.has(name), name);
  });

  it('lists every variable in docker/.env.example', () => {
    const documented = envExampleNames();
    const missing = [...used].filter((name) => !documented.has(name)).sort();
    assert.deepEqual(missing, [], `missing from docker/.env.example: ${missing.join(', ')}`);
  });

  it("lists every variable in the README's Configuration table", () => {
    const documented = readmeConfigNames();
    assert.ok(documented.size > 0, 'README has a ## Configuration table');
    const missing = [...used].filter((name) => !documented.has(name)).sort();
    assert.deepEqual(missing, [], `missing from the README Configuration table: ${missing.join(', ')}`);
  });
});
