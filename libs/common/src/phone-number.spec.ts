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
