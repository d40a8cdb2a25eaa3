import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { http } from '../support/http.js';
import { loadFromRoot, type StackModule } from '../support/stack-scripts.js';

// MODEL_PRICES_FILE: an api replica sharing the suite's database sets the prices of the file at
// start (JSON or YAML); a file it cannot read or with a bad price stops its start, naming the
// problem. Only the processes started here are stopped.

const dir = mkdtempSync(path.join(os.tmpdir(), 'yuxi-prices-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Starts an api with MODEL_PRICES_FILE=file; waits (bounded) until it answers /health or exits, then stops it. */
async function startWith(file: string): Promise<{ healthy: boolean; code: number | null; output: string }> {
  const { SCRIPTS } = await loadFromRoot<StackModule>('scripts/lib/stack.mjs');
  const { freePort } = await loadFromRoot<{ freePort(): Promise<number> }>('scripts/lib/infra.mjs');
  const port = await freePort();
  const child = spawn(process.execPath, [SCRIPTS.api], { env: { ...process.env, PORT: String(port), MODEL_PRICES_FILE: file, LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let healthy = false;
  // Bounded: 300 polls of at most 1 s each, 200 ms apart; a process that exits ends the wait.
  for (let poll = 0; poll < 300 && !healthy && child.exitCode === null && child.signalCode === null; poll += 1) {
    healthy = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1_000) }).then((res) => res.ok, () => false);
    if (!healthy) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const code = await exited;
  return { healthy, code, output };
}

describe('MODEL_PRICES_FILE', () => {
  it('sets the prices of a YAML file at start (created or replaced)', async () => {
    const model = `openai:file-${randomUUID().slice(0, 8)}`;
    const replaced = `openai:file-${randomUUID().slice(0, 8)}`;
    assert.equal((await http(`/api/v1/admin/model-prices/${replaced}`, { method: 'PUT', body: { input_per_mtok_usd: 9, output_per_mtok_usd: 9 } })).status, 201);
    const file = path.join(dir, 'prices.yaml');
    writeFileSync(file, `${model}:\n  input_per_mtok_usd: 0.15\n  output_per_mtok_usd: 0.6\n  cached_input_per_mtok_usd: 0.075\n${replaced}: {input_per_mtok_usd: 1, output_per_mtok_usd: 2}\n`);
    const started = await startWith(file);
    assert.ok(started.healthy, started.output);
    const prices = (await http('/api/v1/admin/model-prices')).body.data as any[];
    const of = (name: string) => prices.find((p) => p.model === name);
    assert.deepEqual([of(model)?.input_per_mtok_usd, of(model)?.output_per_mtok_usd, of(model)?.cached_input_per_mtok_usd, of(model)?.reasoning_per_mtok_usd], [0.15, 0.6, 0.075, null]);
    assert.deepEqual([of(replaced)?.input_per_mtok_usd, of(replaced)?.output_per_mtok_usd], [1, 2]);
  });

  it('stops the start on a bad price or a file it cannot read, naming the problem', async () => {
    const model = `openai:bad-${randomUUID().slice(0, 8)}`;
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ [model]: { input_per_mtok_usd: -1, output_per_mtok_usd: 1 } }));
    const bad = await startWith(file);
    assert.equal(bad.healthy, false);
    assert.notEqual(bad.code, 0);
    assert.ok(bad.output.includes(`MODEL_PRICES_FILE ${file} is invalid`) && bad.output.includes(`${model}.input_per_mtok_usd`), bad.output);
    assert.equal((await http('/api/v1/admin/model-prices')).body.data.some((p: any) => p.model === model), false, 'nothing of a bad file is set');

    const missing = await startWith(path.join(dir, 'missing.yaml'));
    assert.equal(missing.healthy, false);
    assert.notEqual(missing.code, 0);
    assert.match(missing.output, /MODEL_PRICES_FILE \S+missing\.yaml cannot be read/);
  });
});
