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

  it('refuses an envelope that was changed, or sealed under another key', () => {
    const envelope = cipher.encrypt(credentials);
    const parts = envelope.split('.');
    const flipped = Buffer.from(parts[3], 'base64url');
    flipped[0] ^= 1;
    expect(() => cipher.decrypt([...parts.slice(0, 3), flipped.toString('base64url')].join('.'))).toThrow();
    expect(() => new CredentialsCipher({ secretsKey: randomBytes(32) }).decrypt(envelope)).toThrow();
    expect(() => cipher.credentialsOf({ credentialsEncrypted: 'v0.a.b.c' })).toThrow('Unrecognised credentials envelope');
  });
});
