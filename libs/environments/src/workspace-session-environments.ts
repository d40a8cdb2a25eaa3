import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import type { ToolOutcome } from '#libs/tools';
import { CommandRunner, workspaceDiskMb } from './command-limits.js';
import { type HarnessCall, type HarnessOutcome, SessionEnvironments } from './session-environments.js';
import { FileTools } from './tools/file-tools.js';
import { runShell } from './tools/shell-tool.js';
import type { WorkspaceBounds } from './workspace/checkout.js';
import { WorkspaceSetup } from './workspace/workspace-setup.js';
import { type OpenWorkspace, WorkspaceStore } from './workspace/workspace-store.js';
import { WorkspacesRepository } from './workspace/workspaces.repository.js';

/** Tools that only read: their calls commit nothing (and skip the scan). */
const READ_ONLY = new Set(['list_files', 'read_file']);

/**
 * The harness tools run in sessions' workspaces: each call opens the session's checkout at the
 * workspace's head, runs, and commits what it changed as a new version (and its written files as
 * artifacts) before it answers. A session's calls run one at a time on this worker; sessions of a
 * tree on other workers commit onto the same head (per path, the last writer wins).
 */
@Injectable()
export class WorkspaceSessionEnvironments extends SessionEnvironments {
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: WorkspaceStore,
    private readonly repository: WorkspacesRepository,
    private readonly setup: WorkspaceSetup,
    private readonly runner: CommandRunner,
    private readonly config: AppConfig,
  ) {
    super();
  }

  execute(call: HarnessCall): Promise<HarnessOutcome> {
    const previous = this.running.get(call.session.id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.run(call));
    this.running.set(call.session.id, next);
    void next.finally(() => {
      if (this.running.get(call.session.id) === next) this.running.delete(call.session.id);
    }).catch(() => undefined);
    return next;
  }

  private async run(call: HarnessCall): Promise<HarnessOutcome> {
    const { id: sessionId, workdirId } = call.session;
    const bounds: WorkspaceBounds = { maxFiles: this.config.sandbox.workspaceMaxFiles, maxBytes: workspaceDiskMb(call.environment, this.config.sandbox) * 1024 * 1024 };
    const author = { sessionId, turnId: call.turnId, callId: call.callId };
    let state = await this.repository.state(workdirId);
    let setupNotes: string[] = [];
    if (!state?.head && (await this.repository.claimSetup(workdirId, call.session.ownerId, this.setupStaleAfterS(call)))) {
      setupNotes = await this.makeWorkspace(call, bounds);
      state = await this.repository.state(workdirId);
    }
    // Another session of the tree may be making the workspace now: this call starts from an empty
    // one, and its writes merge onto whatever that setup commits.
    let open = await this.store.open(sessionId, workdirId, state?.head ?? null, bounds);
    // Files attached since (a follow-up's attachments) join the workspace before the call, as a version of their own.
    const attached = await this.setup.placeAttachments(call, open.checkout.dir, new Set(state?.placedFileIds ?? []), Object.keys(open.base?.manifest ?? {}));
    if (attached.length > 0 && state?.head) {
      const placed = await this.store.commit(open, { ...author, callId: null }, bounds, { placedFileIds: attached });
      if (placed.kind === 'committed') open = await this.store.open(sessionId, workdirId, placed.version, bounds);
    }
    const outcome = await this.runTool(call, open);
    const withNotes = setupNotes.length > 0 ? prefix(outcome, `[workspace set up]\n${setupNotes.join('\n')}\n\n`) : outcome;
    if (READ_ONLY.has(call.tool)) return withNotes;
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
  private async makeWorkspace(call: HarnessCall, bounds: WorkspaceBounds): Promise<string[]> {
    const open = await this.store.open(call.session.id, call.session.workdirId, null, bounds);
    await open.checkout.wipe();
    const placedFileIds: string[] = [];
    const notes = await this.setup.make(call, open, placedFileIds);
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
