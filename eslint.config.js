// ESLint flat config (ESLint 10, typescript-eslint 8). `npm run lint` = `eslint .`
// TypeScript (apps/, libs/, test/) gets the recommended, non-type-aware rule sets: no type
// information is loaded, so linting stays fast. Plain JS (scripts/*.mjs, this file) runs on
// Node, so it gets Node's globals, listed below rather than pulled in through the `globals` package.
// The layers of libs/ (which lib may import which) are checked by eslint-plugin-boundaries: see LIBS.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import reactHooks from 'eslint-plugin-react-hooks';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

const ROOT = path.dirname(fileURLToPath(import.meta.url));

/**
 * The layers, lowest first. A lib may import any lib of a strictly lower layer, and of its own
 * layer only the libs listed next to it in LIBS (keep those acyclic). Apps sit above every layer:
 * they may import any lib, never each other. Nothing may import an app, and a lib or an app imports
 * another lib only through `#libs/<name>`, never by a relative path into its folder.
 */
const LAYERS = [
  'foundation', // no #libs import at all; sdk must stay so, it is published on its own
  'config',
  'database',
  'platform', // cross-cutting services over the database and Redis
  'data', // the resources, each with its tables and services
  'engine', // the session aggregate: sessions, inputs, turns, runs, steps, items, waitpoints and their transitions
  'application', // the api's protocol, the worker's runtime and the operators' reads
];

/**
 * Every lib under libs/, one a line: its layer, then the libs of that same layer it may import.
 * Adding a lib is adding its line here (lint fails on a libs/ folder missing from this table).
 */
const LIBS = {
  errors: ['foundation'],
  metrics: ['foundation'],
  outbound: ['foundation', 'telemetry'],
  sandbox: ['foundation', 'outbound', 'metrics'],
  sdk: ['foundation'],
  telemetry: ['foundation'],
  config: ['config'],
  database: ['database'],
  audit: ['platform'],
  auth: ['platform', 'audit'],
  events: ['platform'],
  health: ['platform', 'queue'],
  models: ['platform', 'usage'],
  queue: ['platform'],
  secrets: ['platform', 'audit'],
  webhooks: ['platform', 'audit', 'queue', 'secrets', 'events'],
  usage: ['platform'],
  traces: ['platform'],
  files: ['data'],
  tools: ['data', 'files'],
  agents: ['data', 'tools', 'environments'],
  environments: ['data', 'files', 'tools'],
  budgets: ['data'],
  engine: ['engine'],
  protocol: ['application'],
  runtime: ['application'],
  operations: ['application', 'protocol'],
  automations: ['application', 'protocol'],
  retention: ['application', 'protocol'],
};

/** The boundaries/dependencies policies that LAYERS and LIBS stand for. */
function layerPolicies() {
  const libsOnDisk = readdirSync(path.join(ROOT, 'libs'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
  const missing = libsOnDisk.filter((name) => !(name in LIBS));
  if (missing.length > 0) throw new Error(`eslint.config.js: add ${missing.map((name) => `libs/${name}`).join(', ')} to LIBS (its layer)`);
  const layerOf = (name) => {
    const index = LAYERS.indexOf(LIBS[name][0]);
    if (index < 0) throw new Error(`eslint.config.js: LIBS.${name} names an unknown layer: ${LIBS[name][0]}`);
    return index;
  };
  const lib = (names) => ({ element: { type: 'lib', captured: { name: names } } });
  const viaEntryPoint = { source: '#libs/*' };
  const policies = Object.entries(LIBS).flatMap(([name, [, ...sameLayer]]) => {
    for (const other of sameLayer) {
      if (!(other in LIBS) || layerOf(other) !== layerOf(name)) throw new Error(`eslint.config.js: LIBS.${name} lists ${other}, not a lib of its layer`);
    }
    const allowed = [...Object.keys(LIBS).filter((other) => layerOf(other) < layerOf(name)), ...sameLayer];
    return allowed.length > 0 ? [{ from: lib(name), allow: { to: lib(allowed), dependency: viaEntryPoint } }] : [];
  });
  return [
    ...policies,
    { from: { element: { type: 'app' } }, allow: { to: { element: { type: 'lib' } }, dependency: viaEntryPoint } },
    // Last, so that they win over an allow above.
    {
      from: { element: { types: ['lib', 'app'] } },
      disallow: { to: { element: { type: 'lib' } }, dependency: { source: '!#libs/*' } },
      message: '{{from.element.type}} {{from.element.captured.name}} reaches into libs/{{to.element.captured.name}} by a relative path: import it as #libs/{{to.element.captured.name}}',
    },
    {
      from: { element: { types: ['lib', 'app'] } },
      disallow: { to: { element: { type: 'app' } } },
      message: '{{from.element.type}} {{from.element.captured.name}} may not import apps/{{to.element.captured.name}}: nothing imports an app',
    },
  ];
}

/**
 * The size of a hand-written file: at most 400 lines, every line counted (blank lines and comments
 * too), as `wc -l` counts them. A longer file holds more than one concern: split it along a seam,
 * into modules named for what each does. Generated files and migrations are not written by hand.
 */
const MAX_LINES = ['error', { max: 400, skipBlankLines: false, skipComments: false }];
const HAND_WRITTEN = ['{apps,libs,test,scripts,bench}/**/*.{ts,tsx,mjs}'];
const GENERATED_OR_MIGRATION = ['libs/sdk/src/generated/**', 'libs/sdk/dist/**', 'libs/database/src/migrations/**'];

/**
 * At most 8 constructor parameters (Nest injects dependencies through them): a class with more
 * dependencies does more than one thing, so split it by concern rather than raise the limit.
 */
const CONSTRUCTOR_DEPENDENCIES = {
  selector: 'MethodDefinition[kind="constructor"] > FunctionExpression[params.length>8]',
  message: 'a constructor with more than 8 dependencies: a class that needs that many does more than one thing; split it by concern (at most 8)',
};
/** Every Redis connection of the apps is made by libs/config's createRedisClient (see its block below). */
const REDIS_CONNECTIONS = { selector: 'NewExpression[callee.name=/^(Redis|IORedis|Cluster)$/]', message: 'make Redis connections with createRedisClient (#libs/config): it honours REDIS_CLUSTER_NODES' };

/** The Node.js globals (ESM: no require/module/__dirname) that ESLint's no-undef must know. */
const nodeGlobals = Object.fromEntries(
  [
    'AbortController',
    'AbortSignal',
    'Blob',
    'Buffer',
    'BroadcastChannel',
    'DOMException',
    'Event',
    'EventTarget',
    'File',
    'FormData',
    'Headers',
    'MessageChannel',
    'MessageEvent',
    'MessagePort',
    'ReadableStream',
    'Request',
    'Response',
    'TextDecoder',
    'TextEncoder',
    'TransformStream',
    'URL',
    'URLSearchParams',
    'WebAssembly',
    'WritableStream',
    'atob',
    'btoa',
    'clearImmediate',
    'clearInterval',
    'clearTimeout',
    'console',
    'crypto',
    'fetch',
    'global',
    'performance',
    'process',
    'queueMicrotask',
    'setImmediate',
    'setInterval',
    'setTimeout',
    'structuredClone',
  ].map((name) => [name, 'readonly']),
);

/** What the console (a browser app) may use beyond the language's own globals. */
const browserGlobals = Object.fromEntries(
  ['window', 'document', 'navigator', 'location', 'history', 'sessionStorage', 'localStorage', 'HTMLElement', 'HTMLInputElement', 'HTMLTextAreaElement', 'ResizeObserver', 'IntersectionObserver', 'requestAnimationFrame', 'cancelAnimationFrame', 'getComputedStyle', 'matchMedia'].map((name) => [name, 'readonly']),
);

export default defineConfig(
  globalIgnores(['dist/', 'libs/sdk/dist/', 'node_modules/', '.data/', 'bench/.peer/', 'coverage/']),
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  js.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [tseslint.configs.recommended],
  },
  {
    // The console runs in a browser (React): the rules of hooks, and the browser's globals.
    files: ['apps/console/**/*.{ts,tsx}'],
    extends: [reactHooks.configs.flat['recommended-latest']],
    languageOptions: { globals: browserGlobals },
    rules: {
      // Warnings are not allowed to pile up: what the linter flags is fixed or argued in a comment.
      'react-hooks/exhaustive-deps': 'error',
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    plugins: { boundaries },
    settings: {
      'boundaries/root-path': ROOT,
      'boundaries/elements': [
        { type: 'lib', pattern: 'libs/*', capture: ['name'] },
        { type: 'app', pattern: 'apps/*', capture: ['name'] },
      ],
      'boundaries/legacy-templates': false,
      // Re-exports and import() count as imports too (the default is import declarations only).
      'boundaries/dependency-nodes': ['import', 'export', 'dynamic-import'],
      // `#libs/<name>` to libs/<name>/src/index.ts, `./x.js` to ./x.ts: scripts/lib/eslint-import-resolver.cjs.
      'import/resolver': { [path.join(ROOT, 'scripts', 'lib', 'eslint-import-resolver.cjs')]: {} },
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          // Type-only imports count too: a layer may not even name the types of a higher one.
          message:
            'lib {{from.element.captured.name}} may not import #libs/{{to.element.captured.name}}: a lib imports only libs of lower layers, and of its own layer those listed next to it (LAYERS and LIBS in eslint.config.js)',
          policies: layerPolicies(),
        },
      ],
    },
  },
  {
    // The SDK is published as its own package (test/unit/sdk-package.test.ts): no framework, no
    // package, no Node built-in, nothing outside libs/sdk/src.
    files: ['libs/sdk/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(?!\\.\\.?/)', message: 'libs/sdk imports only its own files (./x.js)' }] }],
    },
  },
  {
    files: HAND_WRITTEN,
    ignores: GENERATED_OR_MIGRATION,
    rules: { 'max-lines': MAX_LINES },
  },
  {
    // A block that sets no-restricted-syntax replaces its selectors, so each lists all of its own.
    files: ['**/*.ts', '**/*.tsx'],
    rules: { 'no-restricted-syntax': ['error', CONSTRUCTOR_DEPENDENCIES] },
  },
  {
    // Every Redis connection of the apps is made by libs/config's createRedisClient, which gives a
    // single server or a cluster client (REDIS_CLUSTER_NODES) with the same options.
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['libs/config/**'],
    rules: {
      'no-restricted-syntax': ['error', REDIS_CONNECTIONS, CONSTRUCTOR_DEPENDENCIES],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Tests parse arbitrary JSON responses and assert on shapes they have just checked.
      // (no-non-null-assertion is only in typescript-eslint's `strict` set; off here so a
      // move to `strict` keeps tests as they are.)
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      globals: nodeGlobals,
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'commonjs',
      globals: { ...nodeGlobals, __dirname: 'readonly', __filename: 'readonly' },
    },
  },
);
