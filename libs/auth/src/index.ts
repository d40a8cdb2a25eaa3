export { ApiKeyCreatedDto, ApiKeyDeletedDto, ApiKeyDto, ApiKeyListDto, CreateApiKeyDto } from './api-key.dto.js';
export { AccessGuard, CurrentPrincipal, PublicRoute } from './access.guard.js';
export { ApiKeys } from './api-keys.js';
export { AuthModule } from './auth.module.js';
export { AuthService } from './auth.service.js';
export { Authenticator } from './authenticator.js';
export { generateKeySecret, isWellFormedKey, KEY_PREFIX } from './key-format.js';
export {
  ACCESS_LEVELS,
  type AccessLevel,
  agentViewerOf,
  assertAdmin,
  assertFullAccess,
  assertOperator,
  assertUserToken,
  assertViewer,
  mayUsePrivateAgents,
  onBehalfOfOwner,
  type Principal,
  type Role,
  ROLES,
} from './principal.js';
export { CallerDto, callerDto } from './caller.dto.js';
export { accountLimit, clientOf, RateLimits } from './rate-limits.js';
export { UnknownKeys } from './unknown-keys.js';
export { AllowanceBook, grantedPoints, leaseSize } from './rate-allowance.js';
export { AuthInvalidations } from './auth-invalidations.js';
export { CallerSlots } from './caller-slots.js';
export { CredentialCache, type InvalidationTarget } from './credential-cache.js';
export { SetUserRoleDto, USER_KIND_FILTERS, USER_KINDS, UserDto, type UserKind, type UserKindFilter, UserListDto } from './user.dto.js';
export { SetUserRole } from './user-roles.js';
export { SuspendUser } from './user-suspension.js';
export { Users } from './users.js';
export { LARGE_BODY_BYTES, LargeBodyGate } from './large-body-gate.js';
