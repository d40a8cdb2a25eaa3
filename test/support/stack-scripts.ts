// The project's own scripts (scripts/lib/*.mjs, bench/lib/*.mjs) as tests that launch their own
// processes load them (the fault harness, the Redis Cluster and budget tests): the root they are
// found from, one loader and the shapes of stack.mjs, declared once.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The project root (this file runs as dist/test/support/stack-scripts.js). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Imports a module of the project by its path from the root (`scripts/lib/stack.mjs`). */
export async function loadFromRoot<T>(relative: string): Promise<T> {
  return (await import(pathToFileURL(path.join(ROOT, relative)).href)) as T;
}

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
