// Builds the console (apps/console, a Vite + React app) into dist/console, which the api serves at
// /console. Skipped when the build is newer than every source it bundles (the console and the SDK),
// so `npm test` and `npm start` pay for it only after a change.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, runWithProgress, seconds } from './lib/build.mjs';

const OUT = path.join(ROOT, 'dist', 'console', 'index.html');
const SOURCES = [path.join(ROOT, 'apps', 'console'), path.join(ROOT, 'libs', 'sdk', 'src')];

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

export async function buildConsole(log = console.log, prefix = '[stack]') {
  if (existsSync(OUT) && statSync(OUT).mtimeMs > Math.max(...SOURCES.map(newest))) return;
  log(`${prefix} building the console with vite (a few seconds)…`);
  const took = await runWithProgress(path.join(ROOT, 'node_modules', '.bin', 'vite'), ['build', '--config', path.join('apps', 'console', 'vite.config.ts')], {
    doing: 'building the console',
    log,
    prefix,
  });
  log(`${prefix} console built (${seconds(took)})`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await buildConsole();
