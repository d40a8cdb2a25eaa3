import { readdir, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import type { ToolOutcome } from '#libs/tools';
import { CommandRunner, workspaceDiskMb } from './command-limits.js';
import { type HarnessCall, type HarnessOutcome, SessionEnvironments } from './session-environments.js';
import { FileTools } from './tools/file-tools.js';
import { runShell } from './tools/shell-tool.js';
import type { WorkspaceBounds } from './workspace/checkout.js';
import { WorkspaceSetup } from './workspace/workspace-setup.js';
import { type OpenWorkspace, WorkspaceStore } from './workspace/workspace-store.js';
import { type WorkspaceHead, WorkspacesRepository } from './workspace/workspaces.repository.js';

/** A call waits at most SETUP_WAITS x SETUP_WAIT_MS for another call's setup before it runs without it. */
const SETUP_WAITS = 120;
const SETUP_WAIT_MS = 500;
const SESSION_ID = /^[0-9a-f-]{36}$/;

/** Tools that only read: their calls commit nothing (and skip the scan). */
const READ_ONLY = new Set(['list_files', 'read_file']);

/**
 * The harness tools run in sessions' workspaces: each call opens the session's checkout at the
 * workspace's head, runs, and commits what it changed as a new version (and its written files as
 * artifacts) before it answers. A session's calls run one at a time on this worker; sessions of a
 * tree on other workers commit onto the same head (per path, the last writer wins).
 */
@Injectable()
export class WorkspaceSessionEnvironments extends SessionEnvironments implements OnModuleInit, OnModuleDestroy {
  /** The sessions whose calls run or wait on this worker (or whose checkout is being removed): never swept. */
  private readonly running = new Map<string, Promise<unknown>>();
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly store: WorkspaceStore,
    private readonly repository: WorkspacesRepository,
    private readonly setup: WorkspaceSetup,
    private readonly runner: CommandRunner,
    private readonly config: AppConfig,
  ) {
    super();
  }

  onModuleInit(): void {
    const idleS = this.config.sandbox.checkoutIdleS;
    if (idleS <= 0) return;
    this.sweeper = setInterval(() => void this.sweepCheckouts(idleS).catch(() => undefined), Math.max(10_000, Math.min(idleS * 250, 300_000)));
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  execute(call: HarnessCall): Promise<HarnessOutcome> {
    // The checkout's root is touched after each call: its mtime is when a call last used it (what the sweep reads).
    return this.serialise(call.session.id, () => this.run(call).finally(() => this.touch(call.session.id)));
  }

  /**
   * Removes the checkouts no call used for `idleS` seconds (the durable copy is in the file storage;
   * the next call restores it), never one a call of this worker runs in or waits for. Returns the sessions swept.
   */
  async sweepCheckouts(idleS = this.config.sandbox.checkoutIdleS): Promise<string[]> {
    const dir = path.resolve(this.config.sandbox.dir, 'checkouts');
    const swept: string[] = [];
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (!SESSION_ID.test(name) || this.running.has(name)) continue;
      const usedAt = await stat(path.join(dir, name)).then((found) => found.mtimeMs, () => null);
      if (usedAt === null || Date.now() - usedAt < idleS * 1000 || this.running.has(name)) continue;
      // Held as the session's work: a call arriving meanwhile waits for the removal, then restores the checkout.
      await this.serialise(name, () => rm(path.join(dir, name), { recursive: true, force: true }));
      swept.push(name);
    }
    return swept;
  }

  private serialise<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.running.get(sessionId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.running.set(sessionId, next);
    void next.finally(() => {
      if (this.running.get(sessionId) === next) this.running.delete(sessionId);
    }).catch(() => undefined);
    return next;
  }

  private async touch(sessionId: string): Promise<void> {
    const now = new Date();
    await utimes(this.store.checkoutOf(sessionId).root, now, now).catch(() => undefined);
  }

  private async run(call: HarnessCall): Promise<HarnessOutcome> {
    const { id: sessionId, workdirId } = call.session;
    const bounds: WorkspaceBounds = { maxFiles: this.config.sandbox.workspaceMaxFiles, maxBytes: workspaceDiskMb(call.environment, this.config.sandbox) * 1024 * 1024 };
    const author = { sessionId, turnId: call.turnId, callId: call.callId };
    let state = await this.repository.state(workdirId);
    let setupNotes: string[] = [];
    // Decided on the setup's state, not on a head: a call that committed while a setup was stalled
    // must not make the setup skipped forever. A stale claim is taken over even onto a head.
    for (let tries = 0; state?.setupState !== 'done' && tries < SETUP_WAITS; tries++) {
      if (await this.repository.claimSetup(workdirId, call.session.ownerId, this.setupStaleAfterS(call))) {
        setupNotes = await this.makeWorkspace(call, bounds, state?.head ?? null);
        state = await this.repository.state(workdirId);
        break;
      }
      // Another call (of this tree, maybe on another worker) is making the workspace: wait for it, bounded.
      if (call.signal.aborted) break;
      await sleep(SETUP_WAIT_MS);
      state = await this.repository.state(workdirId);
    }
    // Past the wait the call runs on what is there; its writes merge onto what the setup commits.
    let open = await this.store.open(sessionId, workdirId, state?.head ?? null, bounds);
    // Files attached since (a follow-up's attachments) join the workspace before the call, as a
    // version of their own (so they are recorded as placed, and are not the call's artifacts).
    const attached = await this.setup.placeAttachments(call, open.checkout.dir, new Set(state?.placedFileIds ?? []), Object.keys(open.base?.manifest ?? {}));
    if (attached.length > 0) {
      const placed = await this.store.commit(open, { ...author, callId: null }, bounds, { placedFileIds: attached });
      if (placed.kind === 'committed') open = await this.store.open(sessionId, workdirId, placed.version, bounds);
    }
    const outcome = await this.runTool(call, open);
    const withNotes = setupNotes.length > 0 ? prefix(outcome, `[workspace set up]\n${setupNotes.join('\n')}\n\n`) : outcome;
    if (READ_ONLY.has(call.tool)) return withNotes;
    if (call.signal.aborted) {
      // The lease was lost or the call cancelled: another worker may own the session now, so what
      // this call changed is dropped, never committed over the newer head.
      await this.store.resetToHead(open, bounds);
      return withNotes;
    }
    const committed = await this.store.commit(open, author, bounds);
    if (committed.kind === 'refused') {
      const note = `\n[the workspace changes of this call were not kept: ${committed.reason}; the workspace is as before the call]`;
      const refused = { ...withNotes, success: false, output: withNotes.output + note };
      if (refused.command) refused.command = { ...refused.command, output: refused.command.output + note };
      return refused;
    }
    return committed.kind === 'committed' ? { ...withNotes, workspaceVersionId: committed.version.versionId } : withNotes;
  }

  private runTool(call: HarnessCall, open: OpenWorkspace): Promise<HarnessOutcome> {
    const files = new FileTools(open.checkout.dir, { uid: this.config.sandbox.uid, gid: this.config.sandbox.gid });
    switch (call.tool) {
      case 'shell':
        return runShell(this.runner, this.config.sandbox, call, open.checkout.dir);
      case 'write_file':
        return files.writeFile(call.args);
      case 'apply_patch':
        return files.applyPatch(call.args);
      case 'list_files':
        return files.listFiles(call.args);
      case 'read_file':
        return files.readFile(call.args);
      default:
        return Promise.resolve({ success: false, output: `unknown harness tool ${String(call.tool)}` });
    }
  }

  /** The first version: placed files, attachments and setup commands, committed with the setup's output. */
  private async makeWorkspace(call: HarnessCall, bounds: WorkspaceBounds, head: WorkspaceHead | null): Promise<string[]> {
    const open = await this.store.open(call.session.id, call.session.workdirId, head, bounds);
    if (!head) await open.checkout.wipe();
    const placedFileIds: string[] = [];
    let notes: string[];
    try {
      notes = await this.setup.make(call, open, placedFileIds);
    } catch (failure) {
      // Released, not left `running` for the stale bound: the next call takes the setup over.
      await this.repository.releaseSetup(call.session.workdirId);
      throw failure;
    }
    const author = { sessionId: call.session.id, turnId: call.turnId, callId: null };
    const committed = await this.store.commit(open, author, bounds, { setupOutput: notes.join('\n'), placedFileIds });
    if (committed.kind === 'refused') {
      notes.push(`error: the workspace's setup was not kept: ${committed.reason}`);
      const empty = { written: {}, deleted: [] };
      await this.repository.commit({ workdirId: call.session.workdirId, author, changes: empty, setupOutput: notes.join('\n'), artifacts: false });
    }
    return notes;
  }

  /** A setup claim older than this is taken over (its worker died): every command's longest time, plus a margin. */
  private setupStaleAfterS(call: HarnessCall): number {
    return this.config.sandbox.ceilings.timeoutS * Math.max(1, call.environment.setup_commands?.length ?? 0) + 300;
  }
}

function prefix(outcome: ToolOutcome & HarnessOutcome, text: string): HarnessOutcome {
  return { ...outcome, output: text + outcome.output };
}
