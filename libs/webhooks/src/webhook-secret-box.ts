import { SecretCipher } from '#libs/secrets';

/** First byte of a secret stored without SECRETS_KEY (the cipher's own format starts with 1). */
const PLAIN = 0;

/**
 * Endpoint signing secrets at rest: sealed under SECRETS_KEY (AES-GCM, bound to the endpoint)
 * where the deployment has one, else stored as they are, marked so. Unlike an MCP credential a
 * signing secret is ours to generate, so webhooks work without SECRETS_KEY; with it, a copy of the
 * database alone cannot forge deliveries. Setting the key later seals each secret at its next
 * rotation; both forms open.
 */
export class WebhookSecretBox {
  private readonly cipher: SecretCipher | null;

  constructor(secretsKey: string | undefined) {
    this.cipher = secretsKey ? new SecretCipher(secretsKey) : null;
  }

  seal(secret: string, endpointId: string): Buffer {
    return this.cipher ? this.cipher.seal(secret, endpointId, 'webhook-signing-secret') : Buffer.concat([Buffer.from([PLAIN]), Buffer.from(secret, 'utf8')]);
  }

  /** Throws when the value was sealed under another key (SECRETS_KEY changed) or altered. */
  open(sealed: Buffer, endpointId: string): string {
    if (sealed[0] === PLAIN) return sealed.subarray(1).toString('utf8');
    if (!this.cipher) throw new Error('the signing secret is sealed and SECRETS_KEY is not set');
    return this.cipher.open(sealed, endpointId, 'webhook-signing-secret');
  }
}
