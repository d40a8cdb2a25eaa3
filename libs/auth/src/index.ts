export { ApiKeyCreatedDto, ApiKeyDeletedDto, ApiKeyDto, ApiKeyListDto, CreateApiKeyDto } from './api-key.dto.js';
export { AccessGuard, CurrentPrincipal, PublicRoute } from './access.guard.js';
export { ApiKeys } from './api-keys.js';
export { AuthModule } from './auth.module.js';
export { AuthService } from './auth.service.js';
export { Authenticator } from './authenticator.js';
export { generateKeySecret, isWellFormedKey, KEY_PREFIX } from './key-format.js';
export { ACCESS_LEVELS, type AccessLevel, agentViewerOf, assertAdmin, assertFullAccess, assertUserToken, mayUsePrivateAgents, type Principal } from './principal.js';
export { RateLimits } from './rate-limits.js';
