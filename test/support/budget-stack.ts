// A stack of its own for a budget test (bench/budget.json): its own Postgres and Redis, since the
// suite's stack (DATABASE_URL / REDIS_URL) has other traffic, and periodic work moved out of the
// window so that the counts are the measured operation's own.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { loadFromRoot as load, ROOT } from './stack-scripts.js';

export interface BudgetStack {
  url: string;
  apiKey: string;
  env: Record<string, string>;
  children: { name: string; pid: number }[];
  stop(): Promise<void>;
}

/** Starts the stack; `name` names its data and log folders. */
export async function startBudgetStack(name: string): Promise<BudgetStack> {
  const { startStack } = await load<{ startStack(options: object): Promise<Omit<BudgetStack, 'apiKey'>> }>('scripts/lib/stack.mjs');
  const apiKey = `yx_test_${randomBytes(24).toString('base64url')}`;
  const stack = await startStack({
    dataDir: path.join(os.tmpdir(), `yuxi-${name}-${process.pid}`),
    ephemeral: true,
    useEnvUrls: false,
    logDir: path.join(ROOT, '.data', 'test-logs', name),
    env: {
      BOOTSTRAP_API_KEY: apiKey,
      WORKER_HEALTH_PORT: '0',
      MODEL_REQUEST_AUDIT: 'off',
      STORAGE_DIR: path.join(os.tmpdir(), `yuxi-${name}-${process.pid}`, 'files'),
      // Periodic work (the outbox relay's window, sweeps) runs at its own interval, not per
      // operation: out of the window here.
      OUTBOX_RELAY_MS: '600000',
      RECOVERY_SWEEP_MS: '600000',
      FILE_SWEEP_MS: '600000',
      WEBHOOK_SWEEP_MS: '600000',
      AUTOMATION_SWEEP_MS: '600000',
      RETENTION_SWEEP_MS: '600000',
      // The counts are those of tracing off (the default), whatever the suite's stack, whose
      // environment this process inherits, has on (scripts/test.mjs): no span, store or export.
      TRACING: 'off',
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
    },
  });
  return Object.assign(stack, { apiKey });
}
