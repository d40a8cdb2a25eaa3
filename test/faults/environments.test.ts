// Fault scenario of a session's environment: the worker running a `shell` command dies (kill -9)
// mid-command. Another worker takes the turn over: the command, started without a result, is
// never run again (the model gets outcome_unknown and its command_execution item ends), and the
// workspace is as of the last committed step: what the killed command wrote is not there.
//
// The model is the scripted one; the commands run in real bubblewrap sandboxes. Both workers
// share one SANDBOX_DIR (as two workers on one host would): the takeover's checkout still starts
// from the workspace's committed head, not from what the dead command left on disk.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { API, newKey } from './client.js';
import { Cluster, type FaultInfra, type Proc, RECOVERY_SWEEP_MS, RUN_LEASE_MS, startFaultInfra, waitUntil } from './harness.js';
import { runsOfTurn } from './steps.js';

const tool = (name: string, args: object): string => `[[tool:${name} ${JSON.stringify(args)}]]`;
const SLOW = 'echo two >> a.txt; sleep 30';
/** Lease expiry + a sweep + two model calls and two commands + margin for a small machine. */
const TAKEOVER_BUDGET_MS = RUN_LEASE_MS + RECOVERY_SWEEP_MS + 30_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Whether some file named `name` below `dir` holds `text` (the killed command's write, on disk). */
async function someFileHolds(dir: string, name: string, text: string): Promise<boolean> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile() || entry.name !== name) continue;
    if ((await readFile(path.join(entry.parentPath, entry.name), 'utf8').catch(() => '')).includes(text)) return true;
  }
  return false;
}

describe('faults: environments', () => {
  let infra: FaultInfra;
  before(async () => {
    infra = await startFaultInfra('environments');
  });
  after(async () => {
    await infra?.stop();
  });

  it('k. kill -9 the worker mid-command: the turn completes on another worker with outcome_unknown, the workspace as of the last committed step', { timeout: 180_000 }, async (t) => {
    const sandboxDir = await mkdtemp(path.join(tmpdir(), 'yx-fault-sandbox-'));
    // The sandbox's user passes through it to its checkouts (bwrap binds them as that user).
    await chmod(sandboxDir, 0o711);
    const cluster = await Cluster.start(infra, 'k-env-kill9-mid-command', { apis: 1, workers: 2, env: { SANDBOX_DIR: sandboxDir } });
    try {
      const api = cluster.api();
      const input = `${tool('write_file', { path: 'a.txt', content: 'one\n' })} ${tool('shell', { command: SLOW })} ${tool('shell', { command: 'cat a.txt' })}`;
      const created = await api.request(`${API}/sessions`, { body: { agent_id: 'default-chatbot', environment: { type: 'openai_hosted' }, input }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const session = created.body;
      const turnId = await waitUntil('the session’s first turn', async () => (await api.turns(session.id))[0]?.id as string | undefined);

      // The slow command is running: its item in progress, its call started, its write on disk.
      const callId = await waitUntil(
        'the slow command to start',
        async () => {
          const { rows } = await infra.db.query(
            `SELECT i.content->0->>'call_id' AS call_id FROM items i JOIN run_steps s ON s.turn_id = i.turn_id AND s.kind = 'tool_call' AND s.ref = i.content->0->>'call_id'
             WHERE i.turn_id = $1 AND i.type = 'command_execution' AND i.status = 'in_progress' AND s.status = 'started'`,
            [turnId],
          );
          return rows[0]?.call_id as string | undefined;
        },
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      await waitUntil('the slow command to write', () => someFileHolds(sandboxDir, 'a.txt', 'two'), { timeoutMs: 20_000, intervalMs: 50 });
      const running = (await runsOfTurn(infra, turnId)).filter((r) => r.status === 'in_progress' && r.lease_owner);
      assert.equal(running.length, 1, `one leased run holds the turn: ${JSON.stringify(running)}`);
      const holder: Proc | undefined = await cluster.workerByLeaseOwner(running[0]!.lease_owner!);
      assert.ok(holder, 'a worker of this cluster holds the run');

      cluster.signal(holder, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
      const killedAt = Date.now();
      const ended = await waitUntil(
        'the turn to end',
        async () => {
          const res = await api.turn(session.id, turnId);
          return res.status === 200 && TERMINAL.has(res.body.status) ? res.body : undefined;
        },
        { timeoutMs: TAKEOVER_BUDGET_MS, intervalMs: 200 },
      );
      t.diagnostic(`turn ${ended.status} ${Date.now() - killedAt} ms after SIGKILL`);
      assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
      assert.deepEqual(
        (ended.yuxi.runs as any[]).map((r) => r.status),
        ['interrupted', 'completed'],
        'the killed run is interrupted, another worker completed the turn',
      );

      const items = (await api.request(`${API}/sessions/${session.id}/turns/${turnId}/items?order=asc&limit=100`)).body.data as any[];
      const commands = items.filter((i) => i.type === 'command_execution');
      assert.deepEqual(commands.map((c) => c.command), [SLOW, 'cat a.txt']);
      const [killed, cat] = commands;
      assert.equal(killed.call_id, callId);
      assert.deepEqual([killed.status, killed.exit_code], ['incomplete', null], 'the killed command ended, without an exit code');
      assert.match(killed.output, /^outcome_unknown/);
      const output = items.find((i) => i.type === 'function_call_output' && i.call_id === callId);
      assert.match(output.output, /^outcome_unknown/, 'the model was told the outcome is unknown');
      assert.equal(output.yuxi.success, false);
      const { rows: steps } = await infra.db.query(`SELECT status FROM run_steps WHERE turn_id = $1 AND kind = 'tool_call' AND ref = $2`, [turnId, callId]);
      assert.deepEqual(steps.map((s) => s.status), ['completed'], 'one step for the call: started by the killed run, its outcome recorded by the takeover');
      // The workspace is as of the last committed step: the write_file, not the killed command's
      // append (nor a second append: the command was not run again).
      assert.deepEqual([cat.status, cat.exit_code, cat.output], ['completed', 0, 'one\n']);
      const answer = items.filter((i) => i.role === 'assistant').at(-1);
      assert.equal(answer.content[0].text, 'Tool shell returned: one');
    } finally {
      await cluster.stop();
    }
  });
});
