import { createHash } from 'node:crypto';
import { hashApiKey, issueApiKey } from './api-key-secret';

describe('hashApiKey', () => {
  it('is the SHA-256 of the UTF-8 key in hex, as the stored hashes were written', () => {
    // FIPS 180-2's test vector for "abc".
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    for (const key of ['vak_' + 'x'.repeat(40), 'vak_ünïcødé_key', ' vak_padded ']) {
      expect(hashApiKey(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
    }
  });

  it('matches the hash a key is issued with', () => {
    const issued = issueApiKey();
    expect(issued.hash).toBe(hashApiKey(issued.key));
    expect(issued.key.startsWith(issued.displayPrefix)).toBe(true);
  });
});
