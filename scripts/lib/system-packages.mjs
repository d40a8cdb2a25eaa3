// The system binaries the local stack and the browser tests run (redis-server, chromium, and the
// sessions' sandbox: bubblewrap and socat): found on PATH, or installed with apt-get when this process runs as root (a container, CI); otherwise the
// error says which package to install.
import { execFileSync, execSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

const isRoot = process.getuid?.() === 0;

export function findOnPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Debian's `chromium` for the console's browser tests (playwright-core drives it; no browser is
 * downloaded): found on PATH, or installed with apt-get as redis-server is.
 */
export function ensureChromium(log = console.log) {
  // Session titles may be Chinese (a user's first message): a CJK font keeps screenshots readable.
  const found = findOnPath('chromium') ?? findOnPath('chromium-browser');
  if (found) return found;
  if (!isRoot) throw new Error('chromium not found on PATH. Install it with:\n  sudo apt-get install -y chromium');
  log('[infra] chromium not found; installing it: apt-get update && apt-get install -y chromium');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['-qq', 'update'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium', 'fonts-dejavu-core', 'fonts-wqy-microhei'], { stdio: 'inherit', env });
  const bin = findOnPath('chromium');
  if (!bin) throw new Error('chromium still not on PATH after apt-get install');
  log(`[infra] installed ${bin}`);
  return bin;
}

/** Debian's redis-server, installed with apt-get; its system service is stopped (the stack runs its own). */
export function installRedis(log) {
  if (!isRoot) {
    throw new Error(
      'redis-server not found on PATH. Install it with:\n  sudo apt-get install -y redis-server\n' +
        'or set REDIS_URL to an existing Redis.',
    );
  }
  log('[infra] redis-server not found; installing it: apt-get update && apt-get install -y redis-server');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['-qq', 'update'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'inherit', env });
  // The package may start a system service on :6379; we run our own instance.
  execSync('service redis-server stop >/dev/null 2>&1 || true');
  const bin = findOnPath('redis-server');
  if (!bin) throw new Error('redis-server still not on PATH after apt-get install');
  log(`[infra] installed ${bin}`);
  return bin;
}

/**
 * What the worker's sandboxes run (SANDBOX_RUNTIME=bwrap): Debian's `bubblewrap`, `socat` (the
 * in-sandbox forwarder to the egress proxy) and util-linux's `prlimit`: found on PATH, or
 * installed with apt-get as redis-server is. Answers bwrap's path.
 */
export function ensureBubblewrap(log = console.log) {
  const packages = { bwrap: 'bubblewrap', socat: 'socat', prlimit: 'util-linux' };
  const missing = Object.entries(packages).filter(([bin]) => !findOnPath(bin));
  if (missing.length > 0) {
    const names = [...new Set(missing.map(([, pkg]) => pkg))];
    if (!isRoot) {
      throw new Error(
        `${missing.map(([bin]) => bin).join(', ')} not found on PATH (sessions' sandboxes). Install them with:\n  sudo apt-get install -y ${names.join(' ')}\n` +
          'or set SANDBOX_RUNTIME=none (no environments offered).',
      );
    }
    log(`[infra] ${missing.map(([bin]) => bin).join(', ')} not found; installing: apt-get update && apt-get install -y ${names.join(' ')}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['-qq', 'update'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...names], { stdio: 'inherit', env });
  }
  const bin = findOnPath('bwrap');
  if (!bin || !findOnPath('socat') || !findOnPath('prlimit')) throw new Error('bubblewrap, socat or prlimit still not on PATH after apt-get install');
  if (missing.length > 0) log(`[infra] installed ${bin}`);
  // --disable-userns and a sized --tmpfs, which every sandbox uses, came with bubblewrap 0.8 (Debian 12).
  const version = /(\d+)\.(\d+)/.exec(execFileSync(bin, ['--version'], { encoding: 'utf8' }));
  if (!version || Number(version[1]) * 1000 + Number(version[2]) < 8) throw new Error(`${bin} is older than bubblewrap 0.8, which sessions' sandboxes need (Debian 12 ships it)`);
  return bin;
}
