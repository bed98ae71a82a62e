import { MetadataJson, parsePhoneNumberFromString } from 'libphonenumber-js/core';
import metadata from 'libphonenumber-js/metadata.max.json';

const DIALLABLE = /^\+[0-9\s().-]+$/;
/** Parsing is the costly part of a trigger's validation, and each number is checked twice (normalise, then validate). */
const REMEMBERED = 2048;
const remembered = new Map<string, string | null>();

/** The North American Numbering Plan's calling code, shared by the US, Canada and 23 other countries. */
export const NANP = '1';
/** The national number length every NANP country takes as possible (some take others besides). */
export const NANP_NATIONAL_LENGTH = 10;

/**
 * The library's metadata with the NANP countries reduced to the first, the
 * US. Parsing a +1 number otherwise works out which of the 25 countries it
 * belongs to, matching it against each one's number patterns, the costliest
 * part of a trigger's validation; yet neither the E.164 form (taken from the
 * digits before that step) nor a 10-digit number's possibility (10 is
 * possible in all 25) depends on the country. Other lengths are parsed with
 * the full metadata, as are other calling codes (their entries are the same
 * in both). So every answer is the full parse's (see the spec).
 */
const nanpAsOne: MetadataJson = {
  ...metadata,
  country_calling_codes: { ...metadata.country_calling_codes, [NANP]: [metadata.country_calling_codes[NANP][0]] },
};

/**
 * Normalises an international number (leading plus, any spacing or
 * punctuation) to E.164, or returns null when it is not a possible number.
 */
export function toE164(input: unknown): string | null {
  if (typeof input !== 'string' || input.length > 40 || !DIALLABLE.test(input.trim())) return null;
  const known = remembered.get(input);
  if (known !== undefined) return known;
  const normalised = parse(input.trim());
  if (remembered.size >= REMEMBERED) remembered.clear();
  remembered.set(input, normalised);
  // The validation that follows a normalisation asks for the normal form's own normal form. Where the parse only
  // dropped formatting it is the same number (the parse reads nothing but the digits), so it is remembered and the
  // second look costs no parse. Where it dropped a digit (a national prefix written after the country code, as in
  // `+49 (0)030 …`) the normal form is parsed again like any other input: remembering it as its own would make the
  // answer for that text depend on which numbers the process had seen before.
  if (normalised !== null && normalised !== input && normalised.slice(1) === digitsOf(input)) remembered.set(normalised, normalised);
  return normalised;
}

function digitsOf(text: string): string {
  return text.replace(/\D/g, '');
}

/** E.164's longest number: 15 digits, country code included. */
const E164_MAX_DIGITS = 15;

/**
 * A possible number, in E.164. Refused besides: a number the parse took a
 * carrier selection code from (China's 12345/17951 prefixes, Brazil's 15):
 * such a code is dialled domestically, not after a country code, and the
 * parse drops its digits, so a number too long for its country came out as
 * another one (`+86 12345678901234` as `+86678901234`, a stranger's); and
 * more digits than E.164 allows, which no carrier dials.
 */
function parse(text: string): string | null {
  let parsed = parsePhoneNumberFromString(text, nanpAsOne);
  if (parsed?.countryCallingCode === NANP && parsed.nationalNumber.length !== NANP_NATIONAL_LENGTH) {
    parsed = parsePhoneNumberFromString(text, metadata);
  }
  if (!parsed || !parsed.isPossible() || parsed.carrierCode || parsed.number.length - 1 > E164_MAX_DIGITS) return null;
  return parsed.number;
}
