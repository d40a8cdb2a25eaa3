import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { dataSourceOptions } from '#libs/database';
import { type CommandRunner, type HarnessCall, WorkspaceBlobs, WorkspaceSessionEnvironments, WorkspaceSetup, WorkspacesRepository, WorkspaceStore } from '#libs/environments';
import { FilesRepository, LocalFileStorage } from '#libs/files';
import { BwrapSandbox } from '#libs/sandbox';
import { createSessionWith } from './agents.js';
import { query } from './db.js';
import { env } from './env.js';

/** The local store, counting the objects it writes (to see that only changed files are uploaded). */
export class CountingStorage extends LocalFileStorage {
  puts = 0;
  /** Of those, the ones streamed (a workspace file's bytes are never held whole). */
  streamed = 0;

  override async put(key: string, bytes: Uint8Array): Promise<void> {
    this.puts++;
    await super.put(key, bytes);
  }

  override async putStream(key: string, body: Readable, size: number): Promise<void> {
    this.puts++;
    this.streamed++;
    await super.putStream(key, body, size);
  }
}

/** The environment's store wired by hand on the suite's Postgres, with a store and checkouts of its own (a "worker"). */
export interface StoreRig {
  dataSource: DataSource;
  storage: CountingStorage;
  config: AppConfig;
  repository: WorkspacesRepository;
  store: WorkspaceStore;
  environments(runner?: CommandRunner): WorkspaceSessionEnvironments;
}

/** `storageDir`: shared by rigs that stand for workers of one deployment. */
export async function storeRig(storageDir: string, overrides: Record<string, string> = {}): Promise<StoreRig> {
  const dataSource = await new DataSource(dataSourceOptions(env.databaseUrl, 2)).initialize();
  const storage = new CountingStorage(storageDir);
  const sandboxDir = await mkdtemp(path.join(tmpdir(), 'yx-sandbox-'));
  // The sandbox's user passes through it to its checkouts (bwrap binds them as that user).
  await chmod(sandboxDir, 0o711);
  const config = new AppConfig({ ...process.env, SANDBOX_DIR: sandboxDir, ...overrides });
  const repository = new WorkspacesRepository(dataSource);
  const store = new WorkspaceStore(repository, new WorkspaceBlobs(storage), config);
  const files = new FilesRepository(dataSource);
  const noRunner = { run: () => Promise.reject(new Error('no runner in this test')) } as unknown as CommandRunner;
  return {
    dataSource,
    storage,
    config,
    repository,
    store,
    environments: (runner = noRunner) => new WorkspaceSessionEnvironments(store, repository, new WorkspaceSetup(files, storage, runner, config), runner, config),
  };
}

/** A rig whose calls run in real bubblewrap sandboxes (as the worker's own EnvironmentsModule wires them); `close` ends both. */
export async function sandboxedRig(storageDir: string, overrides: Record<string, string> = {}): Promise<{ rig: StoreRig; sandbox: BwrapSandbox; environments: WorkspaceSessionEnvironments; close(): Promise<void> }> {
  const rig = await storeRig(storageDir, { SANDBOX_UID: '65534', SANDBOX_GID: '65534', SANDBOX_TIMEOUT_S: '30', ...overrides });
  const sandbox = new BwrapSandbox({ uid: 65534, gid: 65534 });
  return {
    rig,
    sandbox,
    environments: rig.environments(sandbox),
    close: async () => {
      await sandbox.close();
      await rig.dataSource.destroy();
    },
  };
}

/** A real session (created through the api) and its owner and workdir. */
export async function realSession(): Promise<{ id: string; ownerId: string; workdirId: string }> {
  const session = await createSessionWith('default-chatbot');
  const [row] = await query<{ owner_id: string; workdir_id: string }>('SELECT owner_id, workdir_id FROM sessions WHERE id = $1', [session.id]);
  return { id: session.id, ownerId: row!.owner_id, workdirId: row!.workdir_id };
}

export function harnessCall(session: { id: string; ownerId: string; workdirId: string }, tool: HarnessCall['tool'], args: Record<string, unknown>, environment: Partial<HarnessCall['environment']> = {}): HarnessCall {
  return {
    session,
    turnId: null as unknown as string,
    callId: `call-${Math.random().toString(36).slice(2)}`,
    environment: { type: 'openai_hosted', network: { access: 'disabled' }, env: {}, files: [], setup_commands: [], limits: {}, ...environment },
    tool,
    args,
    signal: new AbortController().signal,
  };
}
