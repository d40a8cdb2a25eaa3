// Dependency-free on purpose: it runs before node_modules exists on a fresh clone.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function runSync(command, args, env = process.env) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', env });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed with exit code ${result.status}`);
}

/**
 * Installs dependencies when missing, then compiles incrementally with tsc (which emits decorator
 * metadata): the whole project, or what `tscArgs` say (`npm run test:unit`: tsconfig.unit.json).
 */
export function ensureBuilt(log = console.log, { tscArgs = ['-p', 'tsconfig.build.json'], prefix = '[stack]' } = {}) {
  if (!existsSync(path.join(ROOT, 'node_modules', '.package-lock.json'))) {
    log(`${prefix} installing dependencies (npm ci)…`);
    runSync('npm', ['ci', '--no-audit', '--no-fund']);
  }
  log(`${prefix} compiling…`);
  runSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), tscArgs);
}

/** The console too (scripts/build-console.mjs): what `npm start` and `npm test` serve at /console. */
export async function ensureConsoleBuilt(log = console.log, prefix = '[stack]') {
  const { buildConsole } = await import('../build-console.mjs');
  buildConsole(log, prefix);
}
