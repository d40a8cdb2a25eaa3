// The SDK is published as its own npm package (libs/sdk/package.json): it must compile on its own,
// with no import outside libs/sdk/src (no Nest, no #libs, no Node-only types), and `npm pack` must
// build it and pack what an installed copy imports. test/e2e/sdk-install.test.ts installs the
// tarball in a scratch project and runs the README's examples with it.
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = process.cwd();
const SDK = path.join(ROOT, 'libs', 'sdk');

test('libs/sdk compiles as a standalone package (its own tsconfig, DOM + ES2023 only)', () => {
  const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
  const result = spawnSync(tsc, ['-p', path.join(SDK, 'tsconfig.json'), '--noEmit'], { encoding: 'utf8' });
  assert.equal(result.status, 0, `tsc -p libs/sdk/tsconfig.json failed:\n${result.stdout}${result.stderr}`);
});

test('its package.json: built on pack, TypeScript its own dev dependency (the root\'s version), no runtime dependency', () => {
  const sdk = JSON.parse(readFileSync(path.join(SDK, 'package.json'), 'utf8'));
  const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  assert.equal(sdk.scripts.prepack, 'node scripts/build.mjs', 'npm pack and npm publish build dist first');
  assert.equal(sdk.devDependencies?.typescript, root.devDependencies.typescript);
  assert.equal(sdk.dependencies, undefined, 'no runtime dependencies: the tarball installs offline');
  assert.deepEqual(sdk.files, ['dist']);
  assert.equal(sdk.exports['.'].import, './dist/index.js');
  assert.equal(sdk.exports['.'].types, './dist/index.d.ts');
  // AbortSignal.any (transport.ts) is Node 20.3+.
  assert.equal(sdk.engines.node, '>=20.3');
});

test('npm pack ./libs/sdk (the README command) builds dist and packs every module as .js and .d.ts, and nothing else', { timeout: 180_000 }, () => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  const pack = spawnSync('npm', ['pack', './libs/sdk', '--dry-run', '--json', '--offline'], { cwd: ROOT, encoding: 'utf8', timeout: 170_000, env });
  assert.equal(pack.status, 0, `npm pack failed:\n${pack.stdout}${pack.stderr}`);
  const [report] = JSON.parse(pack.stdout) as { name: string; files: { path: string }[] }[];
  assert.equal(report!.name, '@yuxi/agents-sdk');
  const packed = report!.files.map((file) => file.path).sort();
  const modules = readdirSync(path.join(SDK, 'src'), { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.ts'))
    .map((file) => file.split(path.sep).join('/').replace(/\.ts$/, ''));
  const expected = [...modules.flatMap((module) => [`dist/${module}.d.ts`, `dist/${module}.js`]), 'package.json'].sort();
  assert.deepEqual(packed, expected);
});
