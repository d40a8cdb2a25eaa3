export type { ProjectEntity } from './project.entity.js';
export { type NewProject, ProjectsRepository } from './projects.repository.js';
export type { SessionEntity, SubagentInfo, TurnSummary } from './session.entity.js';
export { SESSION_COLUMNS, sessionFromRow } from './session.entity.js';
export { SessionsModule } from './sessions.module.js';
export { type CancellableFilter, type NewSession, type SessionFilter, type SessionPatch, SessionsRepository } from './sessions.repository.js';
export { type MemberSignal, type MemberState, type NewMember, TreeRepository } from './tree.repository.js';
export { type FoundSession, idPrefixRange, type SearchStatus, type SessionOwner, sessionOwnerOf, SessionSearch, type SessionSearchFilter } from './session-search.js';
export {
  COOPERATION_SIGNAL_MACHINE,
  type CooperationSignalStatus,
  SESSION_STATUS_MACHINE,
  type SessionStatus,
  type SessionStatusSource,
  sessionStatusOf,
  sessionStatusSql,
} from './session-states.js';
export { acceptanceSessionColumns, acceptInputGuarded, type ReadForAcceptance, readForAcceptance, visibleSessionRead } from './session-acceptance.js';
export { type ClaimRead, lockForClaim, runStartedWrite, turnFreedWrite, turnStartedWrite } from './session-claims.js';
