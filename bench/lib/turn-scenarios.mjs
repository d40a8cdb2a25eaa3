// The bench's turn scenarios (bench/run.mjs): one session at a time, a turn's overhead, a tool
// turn against the fake OpenAI server, and a long session's history. Each runs against the stack
// and client given.
import pg from 'pg';
import { nextEvent, opened } from './client.mjs';
import { cpuSnapshot, round, summarize, watch } from './measure.mjs';

export function turnScenarios({ stack, client, pids, log, fakeOpenAi }) {
  return { turnOverhead, toolTurn, longSession };

  /** Submit → turn.completed seen on SSE, scripted:echo without delay, one session at a time. */
  async function turnOverhead(iterations = 300, warmup = 30) {
    log('turn overhead…');
    const session = await client.createSession();
    const source = client.subscribe(session.id);
    await opened(source);
    const turn = async (i) => {
      const started = performance.now();
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await client.send(session.id, `ping ${i}`);
      await completed;
      return performance.now() - started;
    };
    for (let i = 0; i < warmup; i += 1) await turn(i);
    const samples = [];
    const w = watch(pids);
    for (let i = 0; i < iterations; i += 1) samples.push(await turn(i));
    const usage = w.stop();
    source.close();
    const latency = summarize(samples);
    return {
      description: 'POST …/events → agent.session.turn.completed on SSE; scripted:echo, no delay; sequential on one session',
      latency_ms: latency,
      throughput_per_s: round(iterations / usage.wall_s),
      ...usage,
      target: 'p50 ≤ 25 ms, p99 ≤ 100 ms',
      met: latency.p50 <= 25 && latency.p99 <= 100,
    };
  }

  /**
   * One tool step through a real `openai:` model (the fake server on the wire): model call 1 asks for
   * the builtin calculator, the worker runs it and stores call and output, model call 2 answers.
   * Baseline: the same agent definition answering at once (one model call). Tool and text turns
   * alternate, each on its own session and SSE stream, so both see the same machine noise.
   */
  async function toolTurn(iterations = 300, warmup = 30) {
    log('tool turn…');
    const turns = warmup + iterations;
    const answer = { text: ['2+2 = ', '4'] };
    const tools = [{ type: 'builtin', name: 'calculator' }];
    // Everything is scripted up front: the fake answers in order, per model name.
    fakeOpenAi.script(
      'bench-tool',
      Array.from({ length: turns }, (_, i) => [{ tool_calls: [{ id: `call_bench_${i}`, name: 'calculator', arguments: '{"expression":"2+2"}' }] }, answer]).flat(),
    );
    fakeOpenAi.script('bench-text', Array.from({ length: turns }, () => answer));
    await client.putAgent('bench-tool', { name: 'Bench tool turn', model: 'openai:bench-tool', tools });
    await client.putAgent('bench-text', { name: 'Bench text turn', model: 'openai:bench-text', tools });
    const open = async (agentId) => {
      const session = await client.createSession(undefined, agentId);
      const source = client.subscribe(session.id);
      await opened(source);
      return { session, source };
    };
    const tool = await open('bench-tool');
    const text = await open('bench-text');
    const turn = async ({ session, source }, i) => {
      const started = performance.now();
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await client.send(session.id, `what is 2+2? (${i})`);
      const { data } = await completed;
      return { ms: performance.now() - started, turnId: data.turn_id };
    };
    for (let i = 0; i < warmup; i += 1) {
      await turn(tool, i);
      await turn(text, i);
    }
    const toolSamples = [];
    const textSamples = [];
    let lastToolTurn;
    const w = watch(pids);
    for (let i = warmup; i < turns; i += 1) {
      const t = await turn(tool, i);
      toolSamples.push(t.ms);
      lastToolTurn = t.turnId;
      textSamples.push((await turn(text, i)).ms);
    }
    const usage = w.stop();
    tool.source.close();
    text.source.close();

    // The tool really ran: every second call carried the calculator's output back, and the last turn stored it.
    const toolRequests = fakeOpenAi.requests('bench-tool');
    const toolOutputs = toolRequests.filter((r) => r.messages.at(-1)?.role === 'tool' && r.messages.at(-1).content === '4').length;
    const items = await client.turnItems(tool.session.id, lastToolTurn);
    const stored = items.map((item) => item.type + (item.role ? `:${item.role}` : '')).join(' → ');
    const storedOk = items.some((item) => item.type === 'function_call' && item.name === 'calculator') && items.some((item) => item.type === 'function_call_output' && item.output === '4');

    const latency = summarize(toolSamples);
    const baseline = summarize(textSamples);
    const ok = toolRequests.length === 2 * turns && toolOutputs === turns && fakeOpenAi.requests('bench-text').length === turns && storedOk;
    return {
      description: 'POST …/events → agent.session.turn.completed on SSE; openai: model on the fake server: tool call (builtin calculator) + text answer; sequential on one session, alternating with the baseline',
      latency_ms: latency,
      // Sequential turns per second of the tool turns alone (the baseline's time is not counted).
      throughput_per_s: round((1000 * iterations) / toolSamples.reduce((a, b) => a + b, 0)),
      ...usage,
      model_calls: { tool: toolRequests.length, text: fakeOpenAi.requests('bench-text').length },
      tool_outputs_returned: toolOutputs,
      last_turn_items: stored,
      baseline: { name: 'text turn through the fake server (same agent definition, one model call), same session setup, alternating', latency_ms: baseline },
      ratio_p50_to_baseline: round(latency.p50 / baseline.p50, 2),
      ratio_p99_to_baseline: round(latency.p99 / baseline.p99, 2),
      tool_step_overhead_p50_ms: round(latency.p50 - baseline.p50),
      target: null,
      checks_passed: ok,
    };
  }

  /**
   * Turn overhead against the length of the history (the model context is built from the
   * items since the last compaction, so building it must not grow with the session). One session is
   * seeded with `longTurns` echo turns (two items each: the user message and the answer); short
   * sessions with 2 turns (4 items), each measured `perShort` times before the next one takes over,
   * so short turns see 4–8 items of history and the long one ≥ 200 throughout. Short and long turns
   * alternate (which goes first alternates too), so both see the same machine noise; the CPU each
   * process used during each turn is charged to its kind.
   */
  async function longSession(rounds = 100, longTurns = 100, perShort = 3) {
    log('long session: seeding…');
    const started = performance.now();
    const open = async () => {
      const session = await client.createSession();
      const source = client.subscribe(session.id);
      await opened(source);
      return { session, source };
    };
    const turn = async ({ session, source }, text) => {
      const begun = performance.now();
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await client.send(session.id, text);
      const { data } = await completed;
      return { ms: performance.now() - begun, inputTokens: data.turn.yuxi.usage?.input_tokens ?? null };
    };
    const long = await open();
    const shorts = await Promise.all(Array.from({ length: Math.ceil(rounds / perShort) }, open));
    // History within a session is sequential; the sessions are seeded side by side.
    await Promise.all([
      (async () => {
        for (let i = 0; i < longTurns; i += 1) await turn(long, `history ${i}`);
      })(),
      ...shorts.map(async (short) => {
        for (let i = 0; i < 2; i += 1) await turn(short, `history ${i}`);
      }),
    ]);
    const all = [long, ...shorts].map((s) => s.session.id);
    const seeded = await itemCounts(all);
    log(`long session: seeded ${seeded.get(long.session.id)} items and ${shorts.length} × 4 in ${round((performance.now() - started) / 1000, 1)} s; measuring…`);

    const kinds = ['short', 'long'];
    const samples = { short: [], long: [] };
    const tokens = { short: [], long: [] };
    const cpu = { short: {}, long: {} };
    const measured = new Map(all.map((id) => [id, 0]));
    // One snapshot between two turns (reading Postgres's CPU walks /proc): what the processes used since the last one goes to the turn just measured.
    let last;
    const measure = async (kind, target, i) => {
      const t = await turn(target, `ping ${i}`);
      const now = cpuSnapshot(pids);
      for (const name of Object.keys(now)) cpu[kind][name] = (cpu[kind][name] ?? 0) + now[name] - last[name];
      last = now;
      samples[kind].push(t.ms);
      tokens[kind].push(t.inputTokens);
      measured.set(target.session.id, measured.get(target.session.id) + 1);
    };
    const w = watch(pids);
    last = cpuSnapshot(pids);
    for (let i = 0; i < rounds; i += 1) {
      const targets = { short: shorts[Math.floor(i / perShort)], long };
      for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) await measure(kind, targets[kind], i);
    }
    const usage = w.stop();
    for (const s of [long, ...shorts]) s.source.close();

    // Every turn stored its two items; the histories the turns saw, from the counts before and after.
    const final = await itemCounts(all);
    const itemsOk = all.every((id) => final.get(id) === seeded.get(id) + 2 * measured.get(id)) && seeded.get(long.session.id) >= 2 * longTurns && shorts.every((s) => seeded.get(s.session.id) === 4);
    const seen = (sessions) => ({ min: Math.min(...sessions.map((s) => seeded.get(s.session.id))), max: Math.max(...sessions.map((s) => final.get(s.session.id) - 2)) });
    const perTurn = (kind) => Object.fromEntries(Object.entries(cpu[kind]).map(([name, seconds]) => [name, round((1000 * seconds) / samples[kind].length)]));
    const range = (values) => (values.includes(null) ? null : { min: Math.min(...values), max: Math.max(...values) });

    const latency = summarize(samples.long);
    const baseline = summarize(samples.short);
    const ratio = round(latency.p50 / baseline.p50, 2);
    const ok = itemsOk && samples.long.length === rounds && samples.short.length === rounds;
    return {
      description: `POST …/events → agent.session.turn.completed on SSE; scripted:echo, no delay; one session with ≥ ${2 * longTurns} items of history, alternating turn by turn with sessions of 4–8 items`,
      latency_ms: latency,
      // Sequential turns per second of the long session's turns alone (the baseline's time is not counted).
      throughput_per_s: round((1000 * rounds) / samples.long.reduce((a, b) => a + b, 0)),
      ...usage,
      history_items: { long: seen([long]), short: seen(shorts) },
      // Words the scripted model was shown (its stand-in for input tokens): the size of the context built.
      model_input_tokens: { long: range(tokens.long), short: range(tokens.short) },
      cpu_ms_per_turn: { long: perTurn('long'), short: perTurn('short') },
      seconds_total: round((performance.now() - started) / 1000, 1),
      baseline: { name: 'the same echo turn on sessions with 4–8 items of history, alternating', latency_ms: baseline },
      ratio_p50_to_baseline: ratio,
      ratio_p90_to_baseline: round(latency.p90 / baseline.p90, 2),
      target: 'p50 with ≥ 200 items of history ≤ 1.2 × p50 with 4–8 items',
      checks_passed: ok,
      met: ok && ratio <= 1.2,
    };
  }

  /** Items stored per session (Postgres). */
  async function itemCounts(sessionIds) {
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    const { rows } = await db.query('SELECT session_id, count(*)::int AS n FROM items WHERE session_id = ANY($1) GROUP BY session_id', [sessionIds]);
    await db.end();
    const counts = new Map(sessionIds.map((id) => [id, 0]));
    for (const row of rows) counts.set(row.session_id, row.n);
    return counts;
  }
}
