// Import resolver for eslint-plugin-boundaries (eslint-module-utils resolver interface v2), used by
// eslint.config.js to tell which lib or app an import lands in. CommonJS because the plugin loads
// resolvers with require().
//
// `#libs/<name>` goes through package.json "imports" to dist/libs/<name>/src/index.js, which
// exists only after a build; tsc maps it back to the source, and so does this resolver:
// libs/<name>/src/index.ts. Relative imports name the emitted `.js`; they resolve to the `.ts`
// source next to it. Packages and Node built-ins are left unresolved on purpose: the plugin then
// counts them as external, which the layer rules do not look at.
const { existsSync } = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCE_EXTENSIONS = { '.js': '.ts', '.mjs': '.mts', '.cjs': '.cts' };

/** @returns {{ found: true, path: string } | { found: false }} */
function resolve(source, file) {
  const lib = /^#libs\/([^/]+)$/.exec(source);
  if (lib) return existing(path.join(ROOT, 'libs', lib[1], 'src', 'index.ts'));
  if (!source.startsWith('.')) return { found: false };
  const target = path.resolve(path.dirname(file), source);
  const extension = path.extname(target);
  if (SOURCE_EXTENSIONS[extension] && !existsSync(target)) {
    return existing(target.slice(0, -extension.length) + SOURCE_EXTENSIONS[extension]);
  }
  return existing(target);
}

function existing(file) {
  return existsSync(file) ? { found: true, path: file } : { found: false };
}

module.exports = { interfaceVersion: 2, resolve };
