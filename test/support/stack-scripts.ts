// The shapes of scripts/lib/stack.mjs as tests that launch their own api and worker processes use
// it (the fault harness, the Redis Cluster test): one declaration for both.
import type { ChildProcess } from 'node:child_process';

/** An api or worker process started by stack.mjs `launch`. */
export interface AppChild extends ChildProcess {
  name: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StackModule {
  SCRIPTS: { api: string; worker: string; migrate: string };
  launch(name: string, script: string, env: NodeJS.ProcessEnv, logDir: string | null): AppChild;
  stopChild(child: AppChild, graceMs?: number): Promise<void>;
  waitForHealth(url: string, children: AppChild[], timeoutMs: number): Promise<void>;
}
