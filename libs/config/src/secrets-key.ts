import { randomBytes } from 'node:crypto';

/**
 * A key this short of distinct byte values was not drawn at random: 32
 * random bytes have about 30, and fewer than 16 happens about once in
 * 10^17 draws. It catches a repeated pattern (`11…`, `abab…`), not every
 * guessable key.
 */
const MIN_DISTINCT_BYTES = 16;

const BASE64 = /^[A-Za-z0-9+/]{43}=?$/;
const BASE64URL = /^[A-Za-z0-9_-]{43}=?$/;

export type ParsedSecretsKey = { ok: true; key: Buffer } | { ok: false; problem: string };

/**
 * SECRETS_KEY's 32 bytes, as 64 hex characters or as base64 (standard or
 * URL alphabet, with or without its padding) exactly as those bytes
 * encode: Node's decoder skips what is not base64 and takes any text that
 * comes to 32 bytes (a passphrase, say), which is not a key. The all-zero
 * key is taken here (whether it may be used depends on where the service
 * runs: `loadAppConfig`). `problem` never holds the value.
 */
export function parseSecretsKey(raw: string): ParsedSecretsKey {
  const text = raw.trim();
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, 'hex');
  else if (BASE64.test(text) && Buffer.from(text, 'base64').toString('base64').replace(/=$/, '') === text.replace(/=$/, '')) {
    key = Buffer.from(text, 'base64');
  } else if (BASE64URL.test(text) && Buffer.from(text, 'base64url').toString('base64url') === text.replace(/=$/, '')) {
    key = Buffer.from(text, 'base64url');
  }
  if (!key) return { ok: false, problem: 'must be 32 bytes written as 64 hex characters or as base64 (openssl rand -hex 32)' };
  if (!isAllZero(key) && new Set(key).size < MIN_DISTINCT_BYTES) {
    return { ok: false, problem: `does not look random (a repeated pattern): draw one with openssl rand -hex 32` };
  }
  return { ok: true, key };
}

/** The all-zero key, which docker-compose.yml once fell back to: anyone can read it there. */
export function isAllZero(key: Buffer): boolean {
  return key.every((byte) => byte === 0);
}

/** A new key, as SECRETS_KEY takes it. */
export function newSecretsKey(): string {
  return randomBytes(32).toString('hex');
}
