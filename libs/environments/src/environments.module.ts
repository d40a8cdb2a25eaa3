import { Module } from '@nestjs/common';
import { FilesModule } from '#libs/files';
import { CommandRunner } from './command-limits.js';
import { SessionEnvironments } from './session-environments.js';
import { WorkspaceSessionEnvironments } from './workspace-session-environments.js';
import { WorkspaceBlobs } from './workspace/workspace-blobs.js';
import { WorkspaceSetup } from './workspace/workspace-setup.js';
import { WorkspaceStore } from './workspace/workspace-store.js';
import { WorkspacesRepository } from './workspace/workspaces.repository.js';

/** Until the worker's sandbox runner is wired, a command is answered with why it did not run. */
class NoCommandRunner extends CommandRunner {
  run(): never {
    throw new Error('no sandbox runner is configured on this worker');
  }
}

/**
 * Sessions' environments for the worker: the SessionEnvironments the runtime calls, the
 * workspaces' store and their commands' runner.
 */
@Module({
  imports: [FilesModule],
  providers: [
    WorkspacesRepository,
    WorkspaceBlobs,
    WorkspaceStore,
    WorkspaceSetup,
    { provide: CommandRunner, useClass: NoCommandRunner },
    { provide: SessionEnvironments, useClass: WorkspaceSessionEnvironments },
  ],
  exports: [SessionEnvironments, WorkspaceStore, WorkspacesRepository],
})
export class EnvironmentsModule {}
