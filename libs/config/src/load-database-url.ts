import { loadAppConfig } from './load-app-config';

type Env = Record<string, string | undefined>;

/** Satisfies `loadAppConfig`'s required key; never used to encrypt or sign anything. */
const UNUSED_SECRETS_KEY = '00'.repeat(32);

/**
 * `DATABASE_URL` alone, defaulted and validated exactly as the apps read it, for
 * tools such as migrations and bootstrap that must work before a secrets key exists.
 * Throws `ConfigError` naming `DATABASE_URL` when it is malformed.
 */
// eslint-disable-next-line no-restricted-properties -- the config lib is where the environment is read
export function loadDatabaseUrl(env: Env = process.env): string {
  return loadAppConfig({ DATABASE_URL: env.DATABASE_URL, SECRETS_KEY: UNUSED_SECRETS_KEY }).databaseUrl;
}
