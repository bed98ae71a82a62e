import { hash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'vak_';

export interface IssuedApiKey {
  /** The full key, shown to its owner once and never stored. */
  key: string;
  hash: string;
  /** The first characters, stored to tell keys apart in listings. */
  displayPrefix: string;
}

export function issueApiKey(): IssuedApiKey {
  const key = KEY_PREFIX + randomBytes(30).toString('base64url');
  return { key, hash: hashApiKey(key), displayPrefix: key.slice(0, KEY_PREFIX.length + 6) };
}

/** SHA-256 of the key's UTF-8 bytes, in hex: what is stored and looked up. One-shot: every request hashes its key. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}
