// The SDK is published as its own npm package (libs/sdk/package.json): it must compile on its own,
// with no import outside libs/sdk/src (no Nest, no #libs, no Node-only types).
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = process.cwd();

test('libs/sdk compiles as a standalone package (its own tsconfig, DOM + ES2023 only)', () => {
  const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
  const result = spawnSync(tsc, ['-p', path.join(ROOT, 'libs', 'sdk', 'tsconfig.json'), '--noEmit'], { encoding: 'utf8' });
  assert.equal(result.status, 0, `tsc -p libs/sdk/tsconfig.json failed:\n${result.stdout}${result.stderr}`);
});
