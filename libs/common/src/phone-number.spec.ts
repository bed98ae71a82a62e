import { toE164 } from './phone-number';

describe('toE164', () => {
  it.each([
    ['+1 (415) 555-2671', '+14155552671'],
    ['+44 20 7946 0958', '+442079460958'],
    ['+49-30-901820', '+4930901820'],
    [' +33.1.23.45.67.89 ', '+33123456789'],
  ])('normalises %s to %s', (input, expected) => {
    expect(toE164(input)).toBe(expected);
  });

  it.each([['4155552671'], ['+1 415 CALL NOW'], ['+1'], ['+999 1234'], [''], ['++14155552671'], [14155552671], [null]])(
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

  it('keeps answering correctly past the size of its memory', () => {
    for (let index = 0; index < 5000; index++) {
      const national = String(2000000 + index);
      expect(toE164(`+1 415 ${national}`)).toBe(`+1415${national}`);
    }
    expect(toE164('+44 20 7946 0958')).toBe('+442079460958');
  });
});
