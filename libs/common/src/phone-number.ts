import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

const DIALLABLE = /^\+[0-9\s().-]+$/;
/** Parsing is the costly part of a trigger's validation, and each number is checked twice (normalise, then validate). */
const REMEMBERED = 2048;
const remembered = new Map<string, string | null>();

/**
 * Normalises an international number (leading plus, any spacing or
 * punctuation) to E.164, or returns null when it is not a possible number.
 */
export function toE164(input: unknown): string | null {
  if (typeof input !== 'string' || input.length > 40 || !DIALLABLE.test(input.trim())) return null;
  const known = remembered.get(input);
  if (known !== undefined) return known;
  const parsed = parsePhoneNumberFromString(input.trim());
  const normalised = parsed && parsed.isPossible() ? parsed.number : null;
  if (remembered.size >= REMEMBERED) remembered.clear();
  remembered.set(input, normalised);
  // The normal form is its own normal form: the validation that follows a normalisation is a look-up.
  if (normalised !== null && normalised !== input) remembered.set(normalised, normalised);
  return normalised;
}
