import { CarrierError } from './carrier-error';

/**
 * The configuration's credentials, read for a call to the carrier (Telnyx,
 * Vonage); unusable ones fail the work at once: no retry will mend them.
 */
export function usableCredentials<T>(
  carrier: string,
  read: (credentials: Record<string, unknown> | null) => T | null,
  problems: (credentials: Record<string, unknown> | null) => string[],
  credentials: Record<string, unknown> | null,
): T {
  const usable = read(credentials);
  if (!usable) {
    throw new CarrierError(`${carrier} credentials are invalid: ${problems(credentials).join('; ')}`, {
      reason: 'credentials_invalid',
      permanent: true,
      notProcessed: true,
    });
  }
  return usable;
}

/**
 * The account credentials name in `field`, compared as the carrier does
 * (`caseless`: Vonage's application UUIDs); null when absent or not a
 * string. Read from credentials as given, valid or not.
 */
export function namedAccount(credentials: Record<string, unknown> | null, field: string, caseless = false): string | null {
  const value = credentials?.[field];
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return caseless ? trimmed.toLowerCase() : trimmed;
}
