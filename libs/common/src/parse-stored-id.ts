/** The largest id of an `integer` (int4) column: every id but a run's. */
export const MAX_ID = 2_147_483_647;

/**
 * The largest run id a request can name: run ids are `bigint`, read as
 * JavaScript numbers, which are exact up to 2^53 − 1 (run ids never reach
 * it; past it two ids would read as one).
 */
export const MAX_RUN_ID = Number.MAX_SAFE_INTEGER;

/**
 * A numeric id as a path gives it: the id (leading zeros are the same id),
 * `malformed` when it is not digits, `out_of_range` past what its column
 * holds (`max`: int4's unless the column is a run's; such an id cannot exist).
 */
export function parseStoredId(value: string, max: number = MAX_ID): number | 'malformed' | 'out_of_range' {
  // Digits only (a route parameter is at most 100 characters).
  const digits = /^\d+$/.test(value) ? value.replace(/^0+/, '') : null;
  if (digits === null || digits === '') return 'malformed';
  if (digits.length > String(max).length || Number(digits) > max) return 'out_of_range';
  return Number(digits);
}
