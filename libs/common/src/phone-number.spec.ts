import { Metadata } from 'libphonenumber-js/core';
import examples from 'libphonenumber-js/examples.mobile.json';
import { getCountries, getCountryCallingCode, getExampleNumber, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import metadata from 'libphonenumber-js/metadata.max.json';
import { seededRandom } from '../../../test/support/seeded-random';
import { NANP, NANP_NATIONAL_LENGTH, toE164 } from './phone-number';

describe('toE164', () => {
  it.each([
    ['+1 (415) 555-2671', '+14155552671'],
    ['+44 20 7946 0958', '+442079460958'],
    ['+49-30-901820', '+4930901820'],
    [' +33.1.23.45.67.89 ', '+33123456789'],
    // A national prefix written after the country code is dropped: the same number.
    ['+44 (0)20 7946 0018', '+442079460018'],
    ['+86 013800138000', '+8613800138000'],
    // 15 digits: E.164's longest.
    ['+49 30 12345678901', '+493012345678901'],
  ])('normalises %s to %s', (input, expected) => {
    expect(toE164(input)).toBe(expected);
  });

  it.each([
    ['4155552671'],
    ['+1 415 CALL NOW'],
    ['+1'],
    ['+999 1234'],
    [''],
    ['++14155552671'],
    [14155552671],
    [null],
    // Too long for China: the parse would take 12345 (or 17951) for a carrier code and call +86678901234 (+8612345678).
    ['+86 12345678901234'],
    ['+86 17951 1234 5678'],
    // A domestic carrier selection code written after the country code.
    ['+55 0 15 11 91234 5678'],
    // 17 digits: past E.164's 15.
    ['+49123456789012345'],
  ])(
    'rejects %p',
    (input) => {
      expect(toE164(input)).toBeNull();
    },
  );
});

describe('toE164 on repeated input', () => {
  it('answers a number the same way every time, normalised or not', () => {
    for (let round = 0; round < 3; round++) {
      expect(toE164('+1 (415) 555-2671')).toBe('+14155552671');
      expect(toE164('+14155552671')).toBe('+14155552671');
      expect(toE164('+999 1234')).toBeNull();
    }
  });

  it('answers a normal form as a fresh process would, whatever it normalised before', () => {
    // Written with the trunk prefix twice: the parse drops one 0, and the form it answers parses to another number.
    const written = '+49030901820';
    const fresh = parsePhoneNumberFromString(written)!.number;
    expect(fresh).toBe('+4930901820');
    expect(toE164('+49 (0)030 901820')).toBe(written);
    expect(toE164(written)).toBe(fresh);
    expect(toE164('+31 (0)020 123 4567')).toBe('+310201234567');
    expect(toE164('+310201234567')).toBe('+31201234567');
  });

  it('keeps answering correctly past the size of its memory', () => {
    for (let index = 0; index < 5000; index++) {
      const national = String(2000000 + index);
      expect(toE164(`+1 415 ${national}`)).toBe(`+1415${national}`);
    }
    expect(toE164('+44 20 7946 0958')).toBe('+442079460958');
  });
});

describe('toE164 against the full parse', () => {
  /** What the library answers with its full metadata, the country worked out for every number (and our two refusals). */
  const fullParse = (input: string): string | null => {
    const parsed = parsePhoneNumberFromString(input.trim());
    return parsed && parsed.isPossible() && !parsed.carrierCode && parsed.number.length <= 16 ? parsed.number : null;
  };

  it('relies on every NANP country taking a 10-digit national number as possible', () => {
    const plans = new Metadata(metadata);
    const countries = getCountries().filter((country) => getCountryCallingCode(country) === NANP);
    expect(countries.length).toBeGreaterThan(20);
    for (const country of countries) {
      plans.selectNumberingPlan(country);
      expect(plans.numberingPlan?.possibleLengths()).toContain(NANP_NATIONAL_LENGTH);
    }
  });

  it('answers as the full parse does for numbers of every NANP country, of other shared calling codes and of any length', () => {
    const random = seededRandom(20261125);
    const digits = (count: number) => Array.from({ length: count }, () => Math.floor(random() * 10)).join('');
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];
    const separators = ['', ' ', '-', '.', ' (', ') '];
    const spaced = (text: string) => [...text].map((digit) => (random() < 0.2 ? pick(separators) : '') + digit).join('');
    const inputs: string[] = [];
    // Each country's example numbers (its area codes) and random digits after them, then any calling code and length.
    for (const country of getCountries()) {
      const example = getExampleNumber(country, examples);
      if (!example) continue;
      inputs.push(example.number, `+${example.countryCallingCode} ${example.nationalNumber}`);
      for (let index = 0; index < 8; index++) {
        const national = example.nationalNumber.slice(0, 3 + Math.floor(random() * 3));
        inputs.push(`+${example.countryCallingCode}${spaced(national + digits(Math.max(0, 10 - national.length + Math.floor(random() * 5) - 2)))}`);
      }
    }
    // Canada's seven-digit 310 numbers, possible only once the country is known, and with a national prefix before them.
    for (let index = 0; index < 20; index++) inputs.push(`+1 310 ${digits(4)}`, `+1 1 310-${digits(4)}`, `+1 1 ${digits(10)}`);
    const callingCodes = [NANP, NANP, NANP, '7', '39', '44', '47', '61', '212', '262', '290', '358', '590', '599', '49', '33', '81'];
    for (let index = 0; index < 4000; index++) {
      inputs.push(`+${pick(callingCodes)}${spaced((random() < 0.3 ? '1' : '') + digits(4 + Math.floor(random() * 11)))}`);
    }
    const answers = inputs.map((input) => [input, toE164(input)]);
    expect(answers).toEqual(inputs.map((input) => [input, fullParse(input)]));
    // Both kinds are in the sample: numbers taken and numbers refused.
    expect(answers.filter(([, answer]) => answer !== null).length).toBeGreaterThan(1000);
    expect(answers.filter(([, answer]) => answer === null).length).toBeGreaterThan(500);
  });
});
