export { ApiKeyGuard, CurrentPrincipal, PublicRoute } from './api-key.guard.js';
export { AuthModule } from './auth.module.js';
export { AuthService } from './auth.service.js';
export { assertFullAccess, type Principal } from './principal.js';
