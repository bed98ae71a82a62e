import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

const DIALLABLE = /^\+[0-9\s().-]+$/;

/**
 * Normalises an international number (leading plus, any spacing or
 * punctuation) to E.164, or returns null when it is not a possible number.
 */
export function toE164(input: unknown): string | null {
  if (typeof input !== 'string' || input.length > 40 || !DIALLABLE.test(input.trim())) return null;
  const parsed = parsePhoneNumberFromString(input.trim());
  if (!parsed || !parsed.isPossible()) return null;
  return parsed.number;
}
