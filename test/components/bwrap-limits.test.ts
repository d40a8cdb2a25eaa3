// BwrapSandbox's limits against the real bubblewrap: each runaway command (a fork bomb, a 10 GB
// file, an endless loop, a flood of output, a huge allocation) ends with a line saying which limit
// ended it, and never stops another sandbox's command.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { metrics } from '#libs/metrics';
import { BwrapSandbox } from '#libs/sandbox';
import { runIn, SANDBOX_GID, SANDBOX_UID, workspaceRoot } from '../support/bwrap.js';

/** A counter's or histogram count's value in this process's metrics. */
async function metricValue(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, string | number>; metricName?: string }[];
  return values
    .filter((v) => (v.metricName ?? name) === (name.endsWith('_seconds') ? `${name}_count` : name))
    .filter((v) => Object.entries(labels).every(([key, value]) => v.labels[key] === value))
    .reduce((sum, v) => sum + v.value, 0);
}

describe('BwrapSandbox: limits', () => {
  metrics.register('worker');
  const sandbox = new BwrapSandbox({ uid: SANDBOX_UID, gid: SANDBOX_GID });
  const root = workspaceRoot();
  after(async () => {
    await sandbox.close();
    root.remove();
  });

  it('ends a fork bomb on its process limit and wall time, while a command in another sandbox forks and completes', async () => {
    const bombDir = await root.workspace('bomb');
    const otherDir = await root.workspace('other');
    let saturated: () => void = () => undefined;
    const bombSaturated = new Promise<void>((resolve) => (saturated = resolve));
    // The shell stays (sleep): were it to exit, the sandbox's end would take every process of the bomb with it.
    const bomb = runIn(sandbox, bombDir, ':(){ :|:& };:; sleep 30', {
      limits: { timeoutS: 3, processes: 32 },
      onOutput: (chunk) => {
        if (chunk.includes('Resource temporarily unavailable')) saturated();
      },
    });
    // Once a fork of the bomb has failed, its sandbox is at its process limit.
    await Promise.race([bombSaturated, bomb]);
    // The same uid, its own user namespace: the bomb's processes do not count against this one's.
    const other = await runIn(sandbox, otherDir, 'for i in $(seq 1 20); do /bin/true & done; wait; echo $(seq 1 5 | cat | wc -l) done', { limits: { processes: 32 } });
    assert.equal(other.exitCode, 0, other.output);
    assert.equal(other.output, '5 done\n');
    const ended = await bomb;
    assert.equal(ended.exitCode, null);
    assert.equal(ended.limitHit, 'processes');
    assert.match(ended.output, /\[command ended: process limit of 32 reached, then the wall time limit of 3 s reached\]\n$/);
  });

  it('ends a 10 GB file on the file size limit', async () => {
    const dir = await root.workspace('big-file');
    const [limited, hits, timed] = [await metricValue('yuxi_sandbox_commands_total', { result: 'limit' }), await metricValue('yuxi_sandbox_limit_hits_total', { limit: 'file_size' }), await metricValue('yuxi_sandbox_command_duration_seconds')];
    const result = await runIn(sandbox, dir, 'head -c 10G /dev/zero > big', { limits: { fileSizeMb: 8 } });
    assert.equal(result.exitCode, null);
    assert.equal(result.limitHit, 'file_size');
    assert.match(result.output, /\[command ended: file size limit of 8 MiB reached\]\n$/);
    assert.equal(statSync(path.join(dir, 'big')).size, 8 * 1024 * 1024);
    // Counted: a command ended on a limit, which limit, and its duration.
    assert.equal(await metricValue('yuxi_sandbox_commands_total', { result: 'limit' }), limited + 1);
    assert.equal(await metricValue('yuxi_sandbox_limit_hits_total', { limit: 'file_size' }), hits + 1);
    assert.equal(await metricValue('yuxi_sandbox_command_duration_seconds'), timed + 1);
  });

  it('ends an endless loop on the wall time limit', async () => {
    const dir = await root.workspace('loop');
    const result = await runIn(sandbox, dir, 'echo looping; while true; do :; done', { limits: { timeoutS: 2 } });
    assert.equal(result.exitCode, null);
    assert.equal(result.limitHit, 'timeout');
    assert.equal(result.output, 'looping\n[command ended: wall time limit of 2 s reached]\n');
  });

  it('ends a loop on its CPU time limit before the wall time', async () => {
    const dir = await root.workspace('cpu');
    const result = await runIn(sandbox, dir, 'while true; do :; done', { limits: { timeoutS: 60, cpuS: 1 } });
    assert.equal(result.limitHit, 'cpu');
    assert.match(result.output, /\[command ended: CPU time limit of 1 s reached\]\n$/);
  });

  it('cuts a flood of output at the bound, streams no more than it keeps, and ends the command', async () => {
    const dir = await root.workspace('flood');
    let streamed = 0;
    const result = await runIn(sandbox, dir, 'yes', { limits: { timeoutS: 120, outputBytes: 4096 }, onOutput: (chunk) => (streamed += Buffer.byteLength(chunk)) });
    assert.equal(result.exitCode, null);
    assert.equal(result.limitHit, 'output');
    const [kept, ...notes] = result.output.split('\n[');
    assert.equal(Buffer.byteLength(kept), 4096 - 1);
    assert.match(notes[0], /^output cut at 4096 bytes: \d+ more bytes were dropped\]/);
    assert.match(result.output, /\[command ended: it printed more than \d+ MiB, far past the output limit of 4096 bytes\]\n$/);
    assert.equal(streamed, Buffer.byteLength(result.output));
  });

  it('keeps output within the bound without ending a command that stops by itself', async () => {
    const dir = await root.workspace('long-output');
    const result = await runIn(sandbox, dir, 'seq 1 100000', { limits: { outputBytes: 1000 } });
    assert.equal(result.exitCode, 0);
    assert.equal(result.limitHit, null);
    assert.match(result.output, /^1\n2\n3\n/);
    assert.match(result.output, /\n\[output cut at 1000 bytes: \d+ more bytes were dropped\]\n$/);
    assert.ok((await metricValue('yuxi_sandbox_commands_total', { result: 'ok' })) >= 1);
  });

  it('fails an allocation above the memory limit', async () => {
    const dir = await root.workspace('memory');
    const result = await runIn(sandbox, dir, "python3 -c 'x = bytearray(4 << 30)'", { limits: { memoryMb: 256 } });
    assert.equal(result.exitCode, null);
    assert.equal(result.limitHit, 'memory');
    assert.match(result.output, /MemoryError/);
    assert.match(result.output, /\[command ended: memory limit of 256 MiB per process reached\]\n$/);
  });
});
