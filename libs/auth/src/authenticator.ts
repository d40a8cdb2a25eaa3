import { Injectable } from '@nestjs/common';
import { DomainError } from '#libs/errors';
import { AuthService, userSuspended } from './auth.service.js';
import { Principals } from './end-users.js';
import { JwtVerifier, looksLikeJwt } from './jwt-verifier.js';
import type { Principal } from './principal.js';

const END_USER_MAX = 128;

/**
 * Turns the request's credentials into the principal it acts as. Runs before the body is read.
 * `X-End-User-Id` is only for app-bound keys (1–128 characters, no surrounding whitespace); a JWT
 * or an unbound key that sends it is refused (403), even with the caller's own id. An app-bound
 * key without it acts as the app's default end user. The app always comes from the key.
 */
@Injectable()
export class Authenticator {
  constructor(
    private readonly keys: AuthService,
    private readonly jwt: JwtVerifier,
    private readonly principals: Principals,
  ) {}

  /**
   * `beforeEndUser` runs once the credential is verified and before an end user is resolved (which
   * may insert one): the caller's rate limit goes there, so a throttled key creates nothing.
   * `beforeNewEndUser` runs only when the end user does not exist yet, before it is created (the
   * new-end-users limit of the app); either may throw to refuse the request.
   */
  async authenticate(
    authorization: string | undefined,
    endUserHeader: string | undefined,
    beforeEndUser: (caller: Pick<Principal, 'keyId' | 'actorId' | 'appId' | 'limits'>) => Promise<void> = async () => undefined,
    beforeNewEndUser: (caller: { actorId: string; appId: string }) => Promise<void> = async () => undefined,
  ): Promise<Principal> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match?.[1]) throw new DomainError('unauthorized', 'Missing credentials: send Authorization: Bearer <API key or user token>');
    const credential = match[1];
    if (looksLikeJwt(credential) && this.jwt.enabled) {
      const verified = await this.jwt.verify(credential);
      if (!verified) throw new DomainError('unauthorized', 'Invalid, expired or foreign user token');
      if (endUserHeader !== undefined) throw new DomainError('forbidden', 'X-End-User-Id is only accepted with an app-bound API key');
      const user = await this.principals.subjectUser(verified.subject);
      if (user.suspended) throw userSuspended();
      await beforeEndUser({ keyId: null, actorId: user.id, appId: null, limits: { perMinute: null, streams: null } });
      return { userId: user.id, actorId: user.id, keyId: null, access: 'full', appId: null, endUser: null, role: user.role, isAdmin: user.role === 'admin', limits: { perMinute: null, streams: null } };
    }
    const key = await this.keys.verifyKey(credential);
    if (!key) throw new DomainError('unauthorized', 'Invalid, expired or revoked API key');
    this.keys.noteUsed(key.keyId);
    const base = { actorId: key.userId, keyId: key.keyId, access: key.access, role: key.role, isAdmin: key.role === 'admin', limits: key.limits };
    await beforeEndUser({ ...base, appId: key.appId });
    if (key.appId === null) {
      if (endUserHeader !== undefined) throw new DomainError('forbidden', 'X-End-User-Id is only accepted with an app-bound API key');
      return { ...base, userId: key.userId, appId: null, endUser: null };
    }
    const endUser = endUserHeader ?? '';
    if (endUserHeader !== undefined && (endUser.length === 0 || endUser.length > END_USER_MAX || endUser.trim() !== endUser)) {
      throw DomainError.validation([{ field: 'X-End-User-Id', errors: [`must be 1–${END_USER_MAX} characters without surrounding whitespace`] }]);
    }
    const appId = key.appId;
    const userId = await this.principals.endUser(key.userId, appId, endUser, () => beforeNewEndUser({ actorId: key.userId, appId }));
    // An end user holds no role, whatever the key's owner holds.
    return { ...base, role: null, isAdmin: false, userId, appId: key.appId, endUser };
  }
}
