import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { http } from '../support/http.js';

const run = promisify(execFile);
const ROOT = process.cwd();

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
}

// The live document, linted with the repository's Redocly configuration (redocly.yaml: the
// recommended rules). Offline: no telemetry, no update check.
describe('OpenAPI document lint', () => {
  it('is linted as any tool reads it: no plugin of ours, no extension standing for a schema', async () => {
    const config = await readFile(path.join(ROOT, 'redocly.yaml'), 'utf8');
    assert.doesNotMatch(config, /^plugins:/m, 'redocly.yaml loads no plugin: a warning hidden by one would show in every other tool');
    const res = await http('/openapi.json', { key: null });
    assert.doesNotMatch(res.text, /x-sse-event-schema/);
    // The event union is reached from the operations themselves: the stream responses' media type.
    const paths = res.body.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> }>>;
    const streams = Object.values(paths).flatMap((item) =>
      Object.values(item).flatMap((operation) => Object.values(operation.responses ?? {}).flatMap((response) => (response.content?.['text/event-stream'] ? [response.content['text/event-stream']] : []))),
    );
    assert.equal(streams.length, 2, 'the session stream and a streamed create');
    for (const stream of streams) assert.equal(stream.schema?.$ref, '#/components/schemas/SessionEvent');
  });

  it('has no Redocly errors or warnings', async () => {
    const res = await http('/openapi.json', { key: null });
    assert.equal(res.status, 200);
    const dir = await mkdtemp(path.join(tmpdir(), 'openapi-lint-'));
    try {
      const file = path.join(dir, 'openapi.json');
      await writeFile(file, res.text);
      const { stdout } = await run(path.join(ROOT, 'node_modules', '.bin', 'redocly'), ['lint', file, '--format=json', `--config=${path.join(ROOT, 'redocly.yaml')}`], {
        cwd: ROOT,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
        maxBuffer: 64 * 1024 * 1024,
      }).catch((error: { stdout?: string; stderr?: string }) => {
        // redocly exits 1 when it found errors; the JSON report is still on stdout.
        if (!error.stdout) throw new Error(`redocly failed: ${error.stderr ?? String(error)}`);
        return { stdout: error.stdout };
      });
      const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: Problem[] };
      const lines = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
      assert.deepEqual({ errors: report.totals.errors, warnings: report.totals.warnings }, { errors: 0, warnings: 0 }, lines.join('\n'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
