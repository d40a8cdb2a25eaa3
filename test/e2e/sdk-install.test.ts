// The SDK as an integrator gets it, following the README alone: `npm pack ./libs/sdk` (its command),
// the tarball installed offline in a scratch project outside the repository, the README's SDK
// examples compiled there, strict, against the installed package only, and run against the stack.
// TypeScript and @types/node are the repository's (the README has the project install them; the
// suite runs offline).
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { env } from '../support/env.js';
import { readmeBlocks } from '../support/readme.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const PACKAGE = '@yuxi/agents-sdk';
const TOOL_TURN = '### Your first tool turn';
/** Each README example, the file it is saved as, and what it prints (null: compiled, not run). */
const EXAMPLES = [
  { heading: '## TypeScript SDK', file: 'quick-start.ts', prints: 'Echo: Hello from the SDK\ncompleted\n' },
  { heading: TOOL_TURN, file: 'first-tool-turn.ts', prints: 'Tool lookup_order returned: {"order_id":"A-1042","status":"packed"}\ncompleted\n' },
  // A webhook receiver listens until stopped: it is type-checked only.
  { heading: '### Webhooks', file: 'webhook-receiver.ts', prints: null },
];
const STEP_TIMEOUT_MS = 180_000;
const RUN_TIMEOUT_MS = 60_000;

/** The environment of a fresh shell: none of the npm_* variables of the `npm test` running this file, nor the test runner's. */
function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_') && name !== 'NODE_TEST_CONTEXT'));
  return { ...clean, npm_config_update_notifier: 'false', ...extra };
}

function run(command: string, args: string[], cwd: string, timeout = STEP_TIMEOUT_MS, extraEnv: Record<string, string> = {}): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, encoding: 'utf8', timeout, env: shellEnv(extraEnv), maxBuffer: 16 * 1024 * 1024 });
}

function explain(step: string, result: SpawnSyncReturns<string>): string {
  const why = result.error ? String(result.error) : `exit ${result.status}${result.signal ? ` (${result.signal})` : ''}`;
  return `${step}: ${why}\n${result.stdout}${result.stderr}`;
}

describe('sdk: packed, installed outside the repository, the README examples compiled and run', { timeout: 4 * STEP_TIMEOUT_MS }, () => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'yuxi-sdk-install-'));
  const packDir = path.join(scratch, 'pack');
  const app = path.join(scratch, 'app');
  let tarball = '';
  let compiled = false;

  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('packs with the README command: a tarball of the built dist (.js and .d.ts), no sources, no runtime dependencies', () => {
    const [install] = readmeBlocks(ROOT, '## TypeScript SDK', 'bash');
    assert.match(install ?? '', /^npm pack \.\/libs\/sdk\b/m, 'the README packs the SDK with npm pack ./libs/sdk');
    assert.match(install ?? '', /^npm install \/path\/to\/yuxi-agents-sdk-\d+\.\d+\.\d+\.tgz\b/m, 'the README installs the tarball');
    mkdirSync(packDir);
    const pack = run('npm', ['pack', './libs/sdk', '--pack-destination', packDir, '--json', '--offline'], ROOT);
    assert.equal(pack.status, 0, explain('npm pack ./libs/sdk', pack));
    const [report] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
    const files = report!.files.map((file) => file.path).sort();
    for (const module of ['index', 'client', 'admin', 'webhooks', 'session-events', 'types']) {
      assert.ok(files.includes(`dist/${module}.js`) && files.includes(`dist/${module}.d.ts`), `dist/${module}.js and .d.ts are packed: ${files.join(', ')}`);
    }
    assert.deepEqual(
      files.filter((file) => !file.startsWith('dist/')),
      ['package.json'],
      'only dist/ and package.json',
    );
    const manifest = JSON.parse(readFileSync(path.join(ROOT, 'libs', 'sdk', 'package.json'), 'utf8'));
    assert.equal(manifest.dependencies, undefined, 'no runtime dependencies: it installs offline, anywhere');
    tarball = path.join(packDir, report!.filename);
    assert.ok(existsSync(tarball), `${tarball} was written`);
  });

  it('installs offline from the tarball in a scratch project outside the repository', () => {
    assert.ok(tarball, 'packed above');
    mkdirSync(app);
    assert.ok(!realpathSync(app).startsWith(`${ROOT}${path.sep}`), 'the project is outside the repository');
    writeFileSync(path.join(app, 'package.json'), `${JSON.stringify({ name: 'first-tool-turn', private: true, type: 'module' }, null, 2)}\n`);
    const install = run('npm', ['install', tarball, '--offline', '--no-audit', '--no-fund', '--cache', path.join(scratch, 'npm-cache')], app);
    assert.equal(install.status, 0, explain(`npm install ${tarball}`, install));
    const installed = path.join(app, 'node_modules', ...PACKAGE.split('/'));
    assert.ok(existsSync(path.join(installed, 'dist', 'index.js')), `${PACKAGE} is installed with its dist`);
    assert.ok(JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')).dependencies?.[PACKAGE], 'saved as a dependency');
    // What `npm install -D @types/node` would bring (TypeScript itself is run from the repository).
    mkdirSync(path.join(app, 'node_modules', '@types'), { recursive: true });
    symlinkSync(path.join(ROOT, 'node_modules', '@types', 'node'), path.join(app, 'node_modules', '@types', 'node'), 'dir');
  });

  it("compiles the README's SDK examples with the README's tsc flags (strict), against the installed package only", () => {
    assert.ok(existsSync(path.join(app, 'node_modules', ...PACKAGE.split('/'))), 'installed above');
    for (const { heading, file } of EXAMPLES) {
      const [code] = readmeBlocks(ROOT, heading, 'ts');
      assert.ok(code, `the README has a ts example under ${heading}`);
      assert.doesNotMatch(code, /#libs\//, `the example under ${heading} imports ${PACKAGE}, as an integrator does`);
      assert.match(code, new RegExp(`from '${PACKAGE}';`), `the example under ${heading} imports ${PACKAGE}`);
      writeFileSync(path.join(app, file), code);
    }
    // The tool turn types everything it touches: the one cast is the parse of a call's arguments.
    const [toolTurn] = readmeBlocks(ROOT, TOOL_TURN, 'ts');
    const casts = toolTurn!.split('\n').filter((line) => /\bas\s+[A-Z{[]|\bany\b|@ts-/.test(line) || /[\w)\]]!(?!=)/.test(line));
    assert.deepEqual(
      casts.map((line) => line.trim()),
      [toolTurn!.split('\n').find((line) => line.includes('JSON.parse(call.arguments) as'))!.trim()],
      'no cast, any, non-null assertion or ts comment but the parse of the arguments',
    );

    const [commands] = readmeBlocks(ROOT, TOOL_TURN, 'bash');
    // The README pins the TypeScript major these examples are compiled with here (a new major may reject them).
    const major = (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', 'typescript', 'package.json'), 'utf8')) as { version: string }).version.split('.')[0];
    assert.match(commands ?? '', new RegExp(`npm install -D typescript@${major} `), `the README installs typescript@${major}, the major checked here`);
    const flags = /npx tsc (.+?) first-tool-turn\.ts/.exec(commands ?? '')?.[1]?.split(/\s+/) ?? [];
    assert.ok(flags.includes('--strict'), `the README compiles the example strict: ${commands}`);
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const compile = run(process.execPath, [tsc, ...flags, ...EXAMPLES.map((example) => example.file)], app);
    assert.equal(compile.status, 0, explain(`tsc ${flags.join(' ')}`, compile));
    compiled = true;
  });

  for (const { heading, file, prints } of EXAMPLES) {
    if (prints === null) continue;
    it(`runs the example under ${heading} against the stack: it prints ${JSON.stringify(prints)}`, () => {
      assert.ok(compiled, 'compiled above');
      const example = run(process.execPath, [file.replace(/\.ts$/, '.js')], app, RUN_TIMEOUT_MS, { AGENTS_URL: env.apiUrl, AGENTS_API_KEY: env.apiKey });
      assert.equal(example.status, 0, explain(`node ${file}`, example));
      assert.equal(example.stdout, prints);
    });
  }
});
