// ESLint flat config (ESLint 10, typescript-eslint 8). `npm run lint` = `eslint .`
// TypeScript (apps/, libs/, test/) gets the recommended, non-type-aware rule sets: no type
// information is loaded, so linting stays fast. Plain JS (scripts/*.mjs, this file) runs on
// Node, so it gets Node's globals, listed below rather than pulled in through the `globals` package.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

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

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', '.data/', 'bench/.peer/', 'coverage/']),
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommended],
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
);
