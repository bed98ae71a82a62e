import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DomainError } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';

const VERSION = 'v1';

/**
 * Encrypts carrier credentials at rest with AES-256-GCM under a key derived
 * from SECRETS_KEY. The envelope is `v1.<iv>.<tag>.<ciphertext>` in base64url.
 */
@Injectable()
export class CredentialsCipher {
  private readonly key: Buffer;

  constructor(@Inject(APP_CONFIG) config: Pick<AppConfig, 'secretsKey'>) {
    this.key = Buffer.from(hkdfSync('sha256', config.secretsKey, Buffer.alloc(0), 'telephony-credentials', 32));
  }

  encrypt(credentials: Record<string, unknown>): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /** A configuration's credentials, decrypted; null when there is no configuration or it holds none. */
  credentialsOf(config: { credentialsEncrypted: string | null } | null | undefined): Record<string, unknown> | null {
    return config?.credentialsEncrypted ? this.decrypt(config.credentialsEncrypted) : null;
  }

  /**
   * Throws `credentials_unreadable` (503) for an envelope this SECRETS_KEY
   * did not seal (a key change that missed the row) or that is damaged: an
   * operator's fix, said as such to the caller instead of a bare 500.
   */
  decrypt(envelope: string): Record<string, unknown> {
    const [version, iv, tag, ciphertext] = envelope.split('.');
    if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw unreadable('its envelope is not one this server writes');
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    } catch {
      throw unreadable('they were sealed under another SECRETS_KEY, or damaged');
    }
    return JSON.parse(plain.toString('utf8')) as Record<string, unknown>;
  }
}

function unreadable(why: string): DomainError {
  return new DomainError(
    503,
    'credentials_unreadable',
    `The carrier credentials of this telephony configuration cannot be read (${why}): store them again, or run with the SECRETS_KEY that sealed them`,
  );
}
