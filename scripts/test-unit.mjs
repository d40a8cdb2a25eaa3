// `npm run test:unit`: the unit tests (test/unit) alone: pure logic and orchestrators over
// stand-ins, fast (no Postgres, no Redis, no server, no child process, no build of the apps).
// Heavier tests of one component against real machinery (OCR, S3, ESLint, MCP and HTTP servers,
// npm pack) are test/components (`npm run test:components`). `npm test` runs both, against its stack.
//
//   npm run test:unit             every unit test file
//   npm run test:unit -- sdk      only files whose path contains one of the words (each must match one)
//
// A skipped or todo test fails the run; so does a full run with another number of tests than test/test-counts.json records.
import { runTestFolder } from './lib/test-folder.mjs';

// Unit tests share no state, so they share processes: one per core (scripts/lib/test-folder.mjs).
await runTestFolder({ suite: 'test:unit', folder: 'unit', filter: process.argv.slice(2), shareProcesses: true });
