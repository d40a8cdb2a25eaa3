import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { FILE_STORAGE, type FileStorage, FilesRepository, StorageObjectMissing } from '#libs/files';
import type { HarnessCall } from '../session-environments.js';
import { CommandRunner, commandLimits, commandNetwork } from '../command-limits.js';
import { runCommand } from '../command-spans.js';
import { writeInside } from './safe-fs.js';
import { checkWorkspacePath } from './workspace-paths.js';
import type { OpenWorkspace } from './workspace-store.js';

/** Attachments placed in a new workspace at most (the file tools' listing bound). */
const MAX_ATTACHMENTS = 200;

/**
 * Makes a new workspace's content in the session's (empty) checkout: the environment's `files`
 * (the caller's files, by id), the workdir's attachments under `attachments/`, then the
 * `setup_commands` in order (stopping at the first that fails). Returns what happened, line by
 * line: what the workspace records as its setup's output and the first call's output starts with.
 */
@Injectable()
export class WorkspaceSetup {
  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    private readonly runner: CommandRunner,
    private readonly config: AppConfig,
  ) {}

  /**
   * The workdir's ready attachments not in the workspace yet (`placed`), copied into `attachments/`
   * of the checkout at `dir`; a name in use (`paths`, relative to the workspace) takes a ` (2)`.
   * Returns the ids it placed.
   */
  async placeAttachments(call: HarnessCall, dir: string, placed: Set<string>, paths: string[]): Promise<string[]> {
    const owner = { uid: this.config.sandbox.uid, gid: this.config.sandbox.gid };
    const names = new Set(paths.filter((rel) => rel.startsWith('attachments/')).map((rel) => rel.slice('attachments/'.length)));
    const done: string[] = [];
    // The placed ones are left out in the query: past the first MAX_ATTACHMENTS, later ones still come.
    for (const attachment of await this.files.readyInWorkdir(call.session.id, MAX_ATTACHMENTS, [...placed])) {
      if (!attachment.sessionKey || placed.has(attachment.id)) continue;
      const target = checkWorkspacePath(`attachments/${uniqueName(attachment.filename, names)}`);
      if (target.ok) await writeInside(dir, target.path, await this.storage.get(attachment.sessionKey), 0o644, owner, true);
      done.push(attachment.id);
    }
    return done;
  }

  async make(call: HarnessCall, open: OpenWorkspace, placed: string[]): Promise<string[]> {
    const notes: string[] = [];
    const owner = { uid: this.config.sandbox.uid, gid: this.config.sandbox.gid };
    const dir = open.checkout.dir;
    const paths: string[] = [];
    for (const wanted of call.environment.files ?? []) {
      const file = await this.files.findOwned(call.session.ownerId, wanted.file_id);
      const key = file && file.status !== 'deleting' ? (file.sessionKey ?? file.draftKey) : null;
      const target = checkWorkspacePath(wanted.path);
      if (!key) notes.push(`error: file ${wanted.file_id} was not found; ${wanted.path} was not placed`);
      else if (!target.ok) notes.push(`error: file ${wanted.file_id}: ${target.error}`);
      else {
        const bytes = await this.storage.get(key).catch((failure: unknown) => (failure instanceof StorageObjectMissing ? null : Promise.reject(failure)));
        if (bytes) await writeInside(dir, target.path, bytes, 0o644, owner, true);
        else notes.push(`error: file ${wanted.file_id} has no stored bytes; ${wanted.path} was not placed`);
        paths.push(target.path);
      }
    }
    placed.push(...(await this.placeAttachments(call, dir, new Set(), paths)));
    for (const command of call.environment.setup_commands ?? []) {
      const result = await runCommand(this.runner, {
        workspaceDir: dir,
        command,
        env: call.environment.env ?? {},
        limits: commandLimits(call.environment, this.config.sandbox),
        network: commandNetwork(call.environment),
        signal: call.signal,
      }, call, 'setup');
      notes.push(`$ ${command}\n${result.output}${result.output.endsWith('\n') || result.output === '' ? '' : '\n'}[exit code ${result.exitCode ?? 'none'}]`);
      if (result.exitCode !== 0) {
        notes.push('error: a setup command failed; the commands after it were not run');
        break;
      }
    }
    return notes;
  }
}

/** `report.pdf`, then `report (2).pdf`, … for attachments of one name. */
function uniqueName(filename: string, taken: Set<string>): string {
  const dot = filename.lastIndexOf('.');
  const [stem, extension] = dot > 0 ? [filename.slice(0, dot), filename.slice(dot)] : [filename, ''];
  let name = filename;
  for (let copy = 2; taken.has(name); copy++) name = `${stem} (${copy})${extension}`;
  taken.add(name);
  return name;
}
