import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '#libs/audit';
import { ApiKeys } from './api-keys.js';
import { AuthInvalidations } from './auth-invalidations.js';
import { authRedisProvider, authSubscriberProvider } from './auth.redis.js';
import { AuthService } from './auth.service.js';
import { Authenticator } from './authenticator.js';
import { Principals } from './end-users.js';
import { ApiKeyEntity, UserEntity } from './entities.js';
import { JwtVerifier } from './jwt-verifier.js';
import { RateLimits } from './rate-limits.js';
import { SetUserRole } from './user-roles.js';
import { SuspendUser } from './user-suspension.js';
import { Users } from './users.js';

/** Identity: API keys, user tokens, app end users, key management, rate limits. */
@Module({
  imports: [TypeOrmModule.forFeature([UserEntity, ApiKeyEntity]), AuditModule],
  providers: [authRedisProvider, authSubscriberProvider, AuthInvalidations, AuthService, JwtVerifier, Principals, Authenticator, ApiKeys, RateLimits, Users, SetUserRole, SuspendUser],
  exports: [AuthInvalidations, AuthService, Authenticator, ApiKeys, RateLimits, Users, SetUserRole, SuspendUser],
})
export class AuthModule {}
