import { Inject, Module, type OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { FilesModule } from '#libs/files';
import { BwrapSandbox } from '#libs/sandbox';
import { CommandRunner } from './command-limits.js';
import { SessionEnvironments } from './session-environments.js';
import { WorkspaceSessionEnvironments } from './workspace-session-environments.js';
import { WorkspaceBlobs } from './workspace/workspace-blobs.js';
import { WorkspaceSetup } from './workspace/workspace-setup.js';
import { WorkspaceStore } from './workspace/workspace-store.js';
import { WorkspacesRepository } from './workspace/workspaces.repository.js';

/** Commands run in bubblewrap sandboxes as the deployment's unprivileged user (SANDBOX_UID/GID). */
const commandRunner = {
  provide: CommandRunner,
  inject: [AppConfig],
  useFactory: (config: AppConfig): CommandRunner => new BwrapSandbox({ uid: config.sandbox.uid, gid: config.sandbox.gid, egressAllowedHosts: config.sandbox.egressAllowedHosts }),
};

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
    commandRunner,
    { provide: SessionEnvironments, useClass: WorkspaceSessionEnvironments },
  ],
  exports: [SessionEnvironments, WorkspaceStore, WorkspacesRepository],
})
export class EnvironmentsModule implements OnModuleDestroy {
  constructor(@Inject(CommandRunner) private readonly runner: CommandRunner) {}

  async onModuleDestroy(): Promise<void> {
    // The sandbox runner's egress proxies and running commands end with the worker.
    if (this.runner instanceof BwrapSandbox) await this.runner.close();
  }
}
