import { Injectable } from '@nestjs/common';
import { createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';

/**
 * User tokens: HS256 with JWT_SECRET, or keys from JWT_JWKS_URL (RS256/ES256/EdDSA), checked
 * against JWT_ISSUER and JWT_AUDIENCE when set. The algorithm list is explicit, so `alg: none`
 * and algorithm confusion are refused by jose itself. Returns the subject, or null.
 */
@Injectable()
export class JwtVerifier {
  private readonly jwks: JWTVerifyGetKey | null;
  private readonly secret: Uint8Array | null;

  constructor(private readonly config: AppConfig) {
    this.jwks = config.jwtJwksUrl ? createRemoteJWKSet(new URL(config.jwtJwksUrl)) : null;
    this.secret = config.jwtSecret ? new TextEncoder().encode(config.jwtSecret) : null;
  }

  get enabled(): boolean {
    return this.jwks !== null || this.secret !== null;
  }

  async verify(token: string): Promise<{ subject: string; isAdmin: boolean } | null> {
    // A token without an expiry would never expire: exp is required, as is the subject.
    const options = { issuer: this.config.jwtIssuer, audience: this.config.jwtAudience, clockTolerance: 5, requiredClaims: ['exp', 'sub'] };
    try {
      const { payload } = this.secret
        ? await jwtVerify(token, this.secret, { ...options, algorithms: ['HS256'] })
        : this.jwks
          ? await jwtVerify(token, this.jwks, { ...options, algorithms: ['RS256', 'ES256', 'EdDSA'] })
          : { payload: null };
      if (!payload || typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > 255) return null;
      return { subject: payload.sub, isAdmin: false };
    } catch (error) {
      // The key set could not be fetched: the token may be fine; that is an outage, not a 401.
      // jose's own verdicts carry an ERR_* code; a fetch failure of the key set does not.
      const code = (error as { code?: unknown }).code;
      const verdict = typeof code === 'string' && code.startsWith('ERR_') && code !== 'ERR_JWKS_TIMEOUT';
      if (this.jwks !== null && !verdict) {
        throw new DomainError('service_unavailable', 'User tokens cannot be verified right now (the key set is unreachable); retry later');
      }
      return null;
    }
  }
}

/** A bearer credential shaped like a JWT (three base64url segments) rather than an API key. */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);
}
