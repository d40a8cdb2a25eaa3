// Sessions' environments: the workspace a session (its tree, its project) works in, its versions
// in the file storage, the artifacts its commands wrote, and the harness tools that run there.
export { type EnvironmentConfig, type EnvironmentFile, type EnvironmentLimits, type EnvironmentNetwork, type NetworkAccess, WORKSPACE_PATH } from './environment-config.js';
export { type CommandRecord, type HarnessCall, type HarnessOutcome, SessionEnvironments } from './session-environments.js';
export { applyUnifiedDiff, PATCH_MAX_HUNKS, type PatchedFile, type PatchResult } from './tools/unified-diff.js';
export { absoluteWorkspacePath, checkWorkspacePath, type CheckedPath } from './workspace/workspace-paths.js';
export { diffManifests, type Manifest, type ManifestChanges, type ManifestEntry, mergeOntoHead } from './workspace/manifest.js';
export { CommandRunner, commandLimits, commandNetwork, workspaceDiskMb } from './command-limits.js';
export { EnvironmentsModule } from './environments.module.js';
export { WorkspaceSessionEnvironments } from './workspace-session-environments.js';
export { FileTools, LIST_MAX_ENTRIES, READ_MAX_CHARS, WRITE_MAX_BYTES } from './tools/file-tools.js';
export { Checkout, type ScanResult, type WorkspaceBounds } from './workspace/checkout.js';
export { WorkspaceBlobs } from './workspace/workspace-blobs.js';
export { type CommitResult, type OpenWorkspace, WorkspaceStore } from './workspace/workspace-store.js';
export { type CommitRequest, type VersionAuthor, type WorkspaceHead, WorkspacesRepository, type WorkspaceState, type WorkspaceStorage } from './workspace/workspaces.repository.js';
export { ArtifactDeletedDto, ArtifactDto, ArtifactListDto, toArtifactDto } from './artifacts/artifact.dto.js';
export { type Artifact, ArtifactsRepository } from './artifacts/artifacts.repository.js';
export { ArtifactsModule } from './artifacts/artifacts.module.js';
export { WorkspaceSetup } from './workspace/workspace-setup.js';
export { WorkspaceForks, WorkspaceForksModule } from './workspace/workspace-forks.js';
