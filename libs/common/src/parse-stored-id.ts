const MAX_ID = 2_147_483_647;

/**
 * A numeric id as a path gives it: the id (leading zeros are the same id),
 * `malformed` when it is not digits, `out_of_range` past what the id columns
 * hold (such an id cannot exist).
 */
export function parseStoredId(value: string): number | 'malformed' | 'out_of_range' {
  // Digits only (a route parameter is at most 100 characters).
  const digits = /^\d+$/.test(value) ? value.replace(/^0+/, '') : null;
  if (digits === null || digits === '') return 'malformed';
  if (digits.length > String(MAX_ID).length || Number(digits) > MAX_ID) return 'out_of_range';
  return Number(digits);
}
