import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { env } from '../support/env.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const REGENERATE = 'run `npm run sdk:generate` and commit docs/openapi.json and libs/sdk/src/generated/schema.ts';

/** JSON pointers where two documents differ (the first `limit` of them). */
function differences(a: unknown, b: unknown, at = '', out: string[] = [], limit = 10): string[] {
  if (out.length >= limit) return out;
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) differences((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${at}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`, out, limit);
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(at || '/');
  }
  return out;
}

// The SDK is typed from a committed snapshot of the document; these keep the two from drifting.
describe('sdk: the committed OpenAPI snapshot and generated types', () => {
  it('equals the live /openapi.json', async () => {
    const res = await fetch(`${env.apiUrl}/openapi.json`);
    assert.equal(res.status, 200);
    const live = (await res.json()) as unknown;
    const snapshot = JSON.parse(readFileSync(path.join(ROOT, 'docs', 'openapi.json'), 'utf8')) as unknown;
    const diff = differences(snapshot, live);
    assert.deepEqual(diff, [], `The live document differs from docs/openapi.json at ${diff.join(', ')}: ${REGENERATE}`);
  });

  it('generates exactly the committed libs/sdk/src/generated/schema.ts', () => {
    const check = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'sdk-generate.mjs'), '--check'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(check.status, 0, `${check.stdout}${check.stderr}\nThe generated types are stale: ${REGENERATE}`);
  });
});
