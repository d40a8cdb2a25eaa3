// `npm run check:invariants`: read-only checks of the durable core's invariants
// (docs/durable-core.md) against DATABASE_URL. Prints every violated invariant with up to 5
// example rows and exits 1 on any violation.
//
//   DATABASE_URL=postgres://… npm run check:invariants [-- --strict] [-- --session <uuid> …]
//
// --strict: a check that cannot run on this schema (a table or column it reads is missing)
// counts as violated instead of skipped. Exit 2: the checks could not run (no DATABASE_URL, no
// build: the statuses are read from the built state machines, see lib/invariants.mjs).
const args = process.argv.slice(2);
const strict = args.includes('--strict');
const sessionIds = args.flatMap((arg, i) => (arg === '--session' && args[i + 1] ? [args[i + 1]] : []));

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('check:invariants: DATABASE_URL is not set');
  process.exit(2);
}

try {
  const { checkInvariants, formatInvariantReport } = await import('./lib/invariants.mjs');
  const result = await checkInvariants(databaseUrl, { strict, sessionIds: sessionIds.length ? sessionIds : undefined });
  const lines = formatInvariantReport(result);
  for (const line of lines) (result.violations.length ? console.error : console.log)(line);
  process.exit(result.violations.length ? 1 : 0);
} catch (error) {
  console.error(`check:invariants: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(2);
}
