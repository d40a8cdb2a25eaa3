// Builds the console (a static single-page app) into dist/console, which the api serves at
// /console. Everything it needs is bundled: no CDN at run time.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

export default defineConfig({
  root: here,
  base: '/console/',
  plugins: [react()],
  resolve: {
    // The SDK is the console's only way to the API: its types come from the OpenAPI document.
    alias: { '#libs/sdk': path.join(root, 'libs/sdk/src/index.ts') },
  },
  build: { outDir: path.join(root, 'dist/console'), emptyOutDir: true, sourcemap: true },
  logLevel: 'warn',
});
