// Builds dist/ (ES modules and .d.ts) with the SDK's own tsconfig: `npm run build`, and `prepare`,
// which npm runs on `npm pack` and `npm publish` (and for a git or folder install), so a packed
// tarball always holds a fresh build. dist/ is emptied first: a removed source leaves no stale file.
// TypeScript is the SDK's dev dependency, found from here upwards: libs/sdk/node_modules after an
// `npm install` in this folder, or the repository's node_modules (`npm install` or `npm start` at
// the root).
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(SDK, 'package.json'));

let tsc;
try {
  tsc = path.join(path.dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
} catch {
  console.error('@yuxi/agents-sdk: TypeScript is not installed. Run `npm install` at the repository root (or in libs/sdk), then pack again.');
  process.exit(1);
}

rmSync(path.join(SDK, 'dist'), { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', path.join(SDK, 'tsconfig.json')], { cwd: SDK, stdio: 'inherit' });
if (result.status !== 0 || !existsSync(path.join(SDK, 'dist', 'index.js')) || !existsSync(path.join(SDK, 'dist', 'index.d.ts'))) {
  console.error('@yuxi/agents-sdk: the build failed (see above): nothing to pack.');
  process.exit(result.status || 1);
}
