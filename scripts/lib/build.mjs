// Dependency-free on purpose: it runs before node_modules exists on a fresh clone.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function runSync(command, args, env = process.env) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', env });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed with exit code ${result.status}`);
}

/** How often a long step says it is still running. */
const PROGRESS_EVERY_MS = 10_000;

/**
 * Runs a command from the project root, its output on the console, and says every 10 s that it is
 * still `doing` (npm ci and a first tsc print nothing for most of a minute). Resolves with the
 * milliseconds it took; rejects when it fails.
 */
export async function runWithProgress(command, args, { doing, log = console.log, prefix = '[stack]', env = process.env } = {}) {
  const started = Date.now();
  const timer = setInterval(() => log(`${prefix} still ${doing}… (${seconds(Date.now() - started)} so far)`), PROGRESS_EVERY_MS);
  try {
    await new Promise((resolve, reject) => {
      const child = spawn(command, args, { cwd: ROOT, stdio: 'inherit', env });
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        if (code === 0) resolve();
        else reject(new Error(`${command} ${args.join(' ')} failed with ${signal ? `signal ${signal}` : `exit code ${code}`}`));
      });
    });
  } finally {
    clearInterval(timer);
  }
  return Date.now() - started;
}

/** `1.2 s`, `38 s`. */
export function seconds(ms) {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/**
 * Installs dependencies when missing, then compiles incrementally with tsc (which emits decorator
 * metadata): the whole project, or what `tscArgs` say (`npm run test:unit`: tsconfig.unit.json,
 * whose incremental state is `buildInfo`). Says what it does and about how long it takes.
 * In build mode (-b), which skips the compiler when no source is newer than the last build: CI's
 * `npm run test:faults` follows `npm test`'s build, and tsc -p spent 6 s re-checking the unchanged
 * program, tsc -b 0.6 s (a build after a `tsc --noEmit` typecheck still emits: the build info
 * says what is not emitted yet).
 */
export async function ensureBuilt(log = console.log, { tscArgs = ['-b', 'tsconfig.build.json'], buildInfo = 'dist/.tsbuildinfo', prefix = '[stack]' } = {}) {
  if (!existsSync(path.join(ROOT, 'node_modules', '.package-lock.json'))) {
    log(`${prefix} installing dependencies with npm ci (about a minute, once)…`);
    const took = await runWithProgress('npm', ['ci', '--no-audit', '--no-fund'], { doing: 'installing dependencies', log, prefix });
    log(`${prefix} dependencies installed (${seconds(took)})`);
  }
  const first = !existsSync(path.join(ROOT, buildInfo));
  log(`${prefix} compiling the TypeScript (${first ? 'a first build: about 40 s' : 'what changed since the last build: seconds, up to about 40 s'})…`);
  const took = await runWithProgress(path.join(ROOT, 'node_modules', '.bin', 'tsc'), tscArgs, { doing: 'compiling', log, prefix });
  log(`${prefix} compiled (${seconds(took)})`);
}

/** The console too (scripts/build-console.mjs): what `npm start` and `npm test` serve at /console. */
export async function ensureConsoleBuilt(log = console.log, prefix = '[stack]') {
  const { buildConsole } = await import('../build-console.mjs');
  await buildConsole(log, prefix);
}
