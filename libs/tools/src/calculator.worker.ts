// Runs in a worker thread (see calculator.ts): an expression can take unbounded time or memory
// (`combinations(1e15, 5e14)`, `ones(1e4, 1e4)`, recursive function definitions), which must not
// stall the worker process's event loop, its heartbeats and every other turn it runs.
import { parentPort } from 'node:worker_threads';
import { all, create } from 'mathjs';

export interface CalculatorRequest {
  id: number;
  expression: string;
}
export type CalculatorReply = { ready: true } | { id: number; ok: true; output: string } | { id: number; ok: false; error: string };

const MAX_OUTPUT = 10_000;

// The mathjs security guide: keep a reference to evaluate, then make every function that parses,
// rewrites or extends the instance throw when an expression calls it. `config` is added because
// it would change the shared instance for every later expression. (`typed` stays: mathjs's own
// functions call it at run time.)
const math = create(all);
const limitedEvaluate = math.evaluate;
const DISABLED = [
  'import', 'createUnit', 'reviver', 'evaluate', 'parse', 'compile', 'parser', 'resolve',
  'simplify', 'simplifyConstant', 'simplifyCore', 'rationalize', 'derivative', 'symbolicEqual',
  'leafCount', 'config',
];
math.import(
  Object.fromEntries(DISABLED.map((name) => [name, () => { throw new Error(`function ${name} is disabled`); }])),
  { override: true },
);

function evaluate(expression: string): string {
  // A fresh scope per call: variables one expression assigns never leak into another's.
  const result: unknown = limitedEvaluate(expression, new Map());
  const value = math.isResultSet(result) ? result.entries.at(-1) : result;
  if (value === undefined) throw new Error('the expression produced no value');
  const output = math.format(value, { precision: 14 });
  if (output.length > MAX_OUTPUT) throw new Error(`result too large (${output.length} characters)`);
  return output;
}

const port = parentPort;
if (port) {
  port.on('message', ({ id, expression }: CalculatorRequest) => {
    let reply: CalculatorReply;
    try {
      reply = { id, ok: true, output: evaluate(expression) };
    } catch (err) {
      reply = { id, ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(reply);
  });
  port.postMessage({ ready: true } satisfies CalculatorReply);
}
