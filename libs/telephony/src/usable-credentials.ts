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
