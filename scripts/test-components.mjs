// `npm run test:components`: the component tests (test/components): one component against real
// machinery, each taking seconds rather than milliseconds: OCR, the S3 store (s3rver), ESLint on
// the project's config, MCP, OpenAI-compatible and search servers on loopback, the webhook sender
// against a receiver, `npm pack` of the SDK, node's test runner, bubblewrap sandboxes. No Postgres, no Redis, no api or
// worker (those are test/e2e). `npm test` runs these too, as it runs test/unit.
//
//   npm run test:components            every component test file
//   npm run test:components -- ocr     only files whose path contains one of the words (each must match one)
//
// A skipped or todo test fails the run; so does a full run with another number of tests than test/test-counts.json records.
import { ensureBubblewrap } from './lib/system-packages.mjs';
import { runTestFolder } from './lib/test-folder.mjs';

// The sandbox's component tests run the real bubblewrap (installed here when missing, as redis-server is).
ensureBubblewrap();

await runTestFolder({ suite: 'test:components', folder: 'components', filter: process.argv.slice(2) });
