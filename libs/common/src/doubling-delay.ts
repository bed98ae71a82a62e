/**
 * A wait that doubles with each try, from `firstMs` at try 1, and stops
 * growing at `capMs`: `min(capMs, firstMs × 2^(try − 1))`. Callers add their
 * own jitter, or none.
 */
export function doublingDelay(firstMs: number, attempt: number, capMs: number): number {
  return Math.min(capMs, firstMs * 2 ** (attempt - 1));
}
