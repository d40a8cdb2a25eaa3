export { SecretCipher } from './secret-cipher.js';
export { type ResolvedSecret, type SecretActor, SecretsStore } from './secrets-store.js';
export { SecretsModule } from './secrets.module.js';
export {
  MAX_SECRET_BYTES,
  PutSecretDto,
  SECRET_NAME_PATTERN,
  SECRET_SCOPES,
  SecretDeletedDto,
  SecretDto,
  SecretListDto,
  SecretScopeQueryDto,
  type SecretScopeName,
} from './secret.dto.js';
