// Sessions' environments: the workspace a session (its tree, its project) works in, its versions
// in the file storage, the artifacts its commands wrote, and the harness tools that run there.
export { type EnvironmentConfig, type EnvironmentFile, type EnvironmentLimits, type EnvironmentNetwork, type NetworkAccess, WORKSPACE_PATH } from './environment-config.js';
export { type CommandRecord, type HarnessCall, type HarnessOutcome, SessionEnvironments } from './session-environments.js';
