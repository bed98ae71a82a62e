import { INEXACT_NUMBER_MESSAGE, inexactNumberPath, isInexactNumber, jsonValueProblem, UNSTORABLE_TEXT_MESSAGE } from './json-values';

describe('JSON values stored as sent', () => {
  it('takes a number as inexact when it is out of range or past ±(2^53 - 1), where every double is an integer', () => {
    for (const exact of [0, -0, 1.5, 0.1, 5e-324, 123456.789, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]) expect(isInexactNumber(exact)).toBe(false);
    for (const inexact of [Infinity, -Infinity, NaN, 2 ** 53, -(2 ** 53), Number('12345678901234567890'), 1e300, 1.7e308]) expect(isInexactNumber(inexact)).toBe(true);
  });

  it('names the first inexact number by its path, through arrays and keys that are not identifiers', () => {
    expect(inexactNumberPath({ a: [1, { b: 2 }], c: 'x' }, 'ctx')).toBeUndefined();
    expect(inexactNumberPath({ a: [1, { b: 2 ** 60 }] }, 'ctx')).toBe('ctx.a[1].b');
    expect(inexactNumberPath({ 'an id': Infinity }, 'ctx')).toBe('ctx["an id"]');
    expect(inexactNumberPath([[0, -Infinity]], 'list')).toBe('list[0][1]');
    expect(inexactNumberPath(2 ** 64, 'n')).toBe('n');
  });

  it('names text Postgres refuses, in keys and values, and inexact numbers, first found first', () => {
    expect(jsonValueProblem({ a: ['ok 😀', { b: null, c: true }] }, 'v')).toBeUndefined();
    expect(jsonValueProblem({ a: ['ok', 'x\u0000'] }, 'v')).toBe(`v.a[1] ${UNSTORABLE_TEXT_MESSAGE}`);
    expect(jsonValueProblem({ a: { 'k\ud800': 1 } }, 'v')).toBe(`a key of v.a ${UNSTORABLE_TEXT_MESSAGE}`);
    expect(jsonValueProblem({ a: '\udc00x' }, 'v')).toBe(`v.a ${UNSTORABLE_TEXT_MESSAGE}`);
    expect(jsonValueProblem({ n: 2 ** 53, s: '\u0000' }, 'v')).toBe(`v.n ${INEXACT_NUMBER_MESSAGE}`);
  });
});
