import { createHash, randomBytes } from 'node:crypto';

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

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}
