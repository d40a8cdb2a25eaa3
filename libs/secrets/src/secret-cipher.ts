import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** The layout's version, first byte of every stored value: a later cipher can read the old rows. */
const FORMAT_V1 = 1;

/**
 * AES-256-GCM under a key derived from SECRETS_KEY. The secret's owner and name are the
 * additional data: a ciphertext copied onto another row (another owner's, another name) does not
 * decrypt, so write access to the table alone cannot redirect one user's credential to another.
 */
export class SecretCipher {
  private readonly key: Buffer;

  constructor(secretsKey: string) {
    // A domain-separated hash: the same string used elsewhere (by mistake) yields another key.
    this.key = createHash('sha256').update('yuxi-secrets-v1\0').update(secretsKey).digest();
  }

  seal(plaintext: string, owner: string | null, name: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(additionalData(owner, name));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([FORMAT_V1]), iv, cipher.getAuthTag(), body]);
  }

  /** Throws when the value was sealed under another key, for another row, or altered. */
  open(sealed: Buffer, owner: string | null, name: string): string {
    if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== FORMAT_V1) throw new Error('not a sealed secret of a known format');
    const iv = sealed.subarray(1, 1 + IV_BYTES);
    const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAAD(additionalData(owner, name));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

function additionalData(owner: string | null, name: string): Buffer {
  return Buffer.from(`${owner ?? 'shared'}\0${name}`, 'utf8');
}
