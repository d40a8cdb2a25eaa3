// The cost of a session's environment: one `shell` step (sandbox start to exit, and the workspace's
// small change persisted as a new version with its artifact) against one builtin tool step, and
// the sandbox alone (a bubblewrap command that does nothing), measured in the same run.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextEvent, opened } from './client.mjs';
import { round, summarize, watch } from './measure.mjs';

export function environmentScenarios({ client, pids, log, fakeOpenAi, sandbox }) {
  return { shellTurn };

  /**
   * Model call 1 asks for `shell` (`echo <i> > note.txt`), the worker runs it in the sandbox and
   * commits the workspace, model call 2 answers; the baseline turn asks for the builtin calculator
   * instead, on a session without an environment. They alternate, each on its own session.
   */
  async function shellTurn(iterations = 60, warmup = 5) {
    log('shell turn…');
    const turns = warmup + iterations;
    const answer = { text: ['done'] };
    fakeOpenAi.script(
      'bench-shell',
      Array.from({ length: turns }, (_, i) => [{ tool_calls: [{ id: `call_shell_${i}`, name: 'shell', arguments: JSON.stringify({ command: `echo ${i} > note.txt` }) }] }, answer]).flat(),
    );
    fakeOpenAi.script(
      'bench-calc',
      Array.from({ length: turns }, (_, i) => [{ tool_calls: [{ id: `call_calc_${i}`, name: 'calculator', arguments: '{"expression":"2+2"}' }] }, answer]).flat(),
    );
    await client.putAgent('bench-shell', { name: 'Bench shell turn', model: 'openai:bench-shell', tools: [] });
    await client.putAgent('bench-calc', { name: 'Bench calculator turn', model: 'openai:bench-calc', tools: [{ type: 'builtin', name: 'calculator' }] });
    const open = async (agentId, environment) => {
      const res = await fetch(`${client.api}/sessions`, {
        method: 'POST',
        headers: client.headers({ 'idempotency-key': randomUUID() }),
        body: JSON.stringify({ agent_id: agentId, environment }),
      });
      if (res.status !== 201) throw new Error(`create session: ${res.status} ${await res.text()}`);
      const session = await res.json();
      const source = client.subscribe(session.id);
      await opened(source);
      return { session, source };
    };
    const shell = await open('bench-shell', { type: 'openai_hosted', network: { access: 'disabled' } });
    const calc = await open('bench-calc', { type: 'none' });
    const turn = async ({ session, source }, i) => {
      const started = performance.now();
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await client.send(session.id, `step ${i}`);
      const { data } = await completed;
      return { ms: performance.now() - started, turnId: data.turn_id };
    };
    for (let i = 0; i < warmup; i += 1) {
      await turn(shell, i);
      await turn(calc, i);
    }
    const shellSamples = [];
    const calcSamples = [];
    let lastShellTurn;
    const w = watch(pids);
    for (let i = warmup; i < turns; i += 1) {
      const t = await turn(shell, i);
      shellSamples.push(t.ms);
      lastShellTurn = t.turnId;
      calcSamples.push((await turn(calc, i)).ms);
    }
    const usage = w.stop();
    shell.source.close();
    calc.source.close();

    // The command really ran and its change was kept: the last turn's item says exit 0, and the artifact holds its output.
    const items = await client.turnItems(shell.session.id, lastShellTurn);
    const command = items.find((item) => item.type === 'command_execution');
    const artifacts = await (await fetch(`${client.api}/sessions/${shell.session.id}/artifacts?limit=1&order=desc`, { headers: client.headers() })).json();
    const latest = artifacts.data?.[0];
    const content = latest ? await (await fetch(`${client.api}/sessions/${shell.session.id}/artifacts/${latest.id}/content`, { headers: client.headers() })).text() : '';
    const ok = command?.exit_code === 0 && latest?.path === '/workspace/note.txt' && content.trim() === String(turns - 1);

    const latency = summarize(shellSamples);
    const baseline = summarize(calcSamples);
    return {
      description: 'POST …/events → agent.session.turn.completed on SSE; openai: model on the fake server: a `shell` call (echo into a file: bubblewrap start to exit, the workspace version and its artifact committed) + text answer, alternating with the same turn calling the builtin calculator',
      latency_ms: latency,
      ...usage,
      baseline: { name: 'the same turn with a builtin calculator call, no environment', latency_ms: baseline },
      shell_step_overhead_p50_ms: round(latency.p50 - baseline.p50),
      shell_step_overhead_p99_ms: round(latency.p99 - baseline.p99),
      sandbox_alone_ms: await sandboxAlone(),
      target: null,
      checks_passed: ok,
    };
  }

  /** `true` in the sandbox, started and ended: what bubblewrap itself costs, without the database or the storage. */
  async function sandboxAlone(iterations = 50) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-sandbox-'));
    try {
      const samples = [];
      for (let i = 0; i < iterations; i += 1) {
        const started = performance.now();
        const result = await sandbox.run(dir, 'true');
        if (result.exitCode !== 0) throw new Error(`the sandbox's \`true\` ended with ${result.exitCode}: ${result.output}`);
        samples.push(performance.now() - started);
      }
      return summarize(samples);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
