import { randomBytes } from 'node:crypto';
import { CredentialsCipher } from './credentials-cipher';

describe('CredentialsCipher', () => {
  const cipher = new CredentialsCipher({ secretsKey: randomBytes(32) });
  const credentials = { account_sid: 'AC123', auth_token: 'secret-token' };

  it('decrypts what it encrypted, and the envelope does not show the secret', () => {
    const envelope = cipher.encrypt(credentials);
    expect(envelope).toMatch(/^v1\./);
    expect(envelope).not.toContain('secret-token');
    expect(cipher.decrypt(envelope)).toEqual(credentials);
  });

  it('gives a configuration its credentials, and null when there is no configuration or it holds none', () => {
    expect(cipher.credentialsOf({ credentialsEncrypted: cipher.encrypt(credentials) })).toEqual(credentials);
    expect(cipher.credentialsOf({ credentialsEncrypted: null })).toBeNull();
    expect(cipher.credentialsOf(null)).toBeNull();
    expect(cipher.credentialsOf(undefined)).toBeNull();
  });

  it('refuses an envelope that was changed, sealed under another key, or not its own, as credentials_unreadable (503)', () => {
    const envelope = cipher.encrypt(credentials);
    const parts = envelope.split('.');
    const flipped = Buffer.from(parts[3], 'base64url');
    flipped[0] ^= 1;
    const unreadable = expect.objectContaining({ status: 503, code: 'credentials_unreadable' });
    const errorOf = (read: () => unknown) => {
      try {
        read();
      } catch (error) {
        return error;
      }
      return 'no error';
    };
    expect(errorOf(() => cipher.decrypt([...parts.slice(0, 3), flipped.toString('base64url')].join('.')))).toEqual(unreadable);
    expect(errorOf(() => new CredentialsCipher({ secretsKey: randomBytes(32) }).decrypt(envelope))).toEqual(unreadable);
    expect(errorOf(() => cipher.credentialsOf({ credentialsEncrypted: 'v0.a.b.c' }))).toEqual(unreadable);
    expect((errorOf(() => cipher.decrypt('v1.AAAA.AAAA')) as Error).message).toMatch(/SECRETS_KEY/);
  });
});
