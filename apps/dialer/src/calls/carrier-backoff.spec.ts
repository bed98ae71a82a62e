import { CARRIER_BACKOFF_CAP_MS, carrierRetryDelayMs, MAX_RETRY_AFTER_MS } from './carrier-backoff';

describe('carrierRetryDelayMs', () => {
  const at = (fraction: number) => () => fraction;

  it('waits 50–100 % of a backoff that doubles per refusal from 0.5 s, up to a minute', () => {
    expect([1, 2, 3].map((refusals) => carrierRetryDelayMs(refusals, undefined, at(0)))).toEqual([250, 500, 1000]);
    expect([1, 2, 3].map((refusals) => carrierRetryDelayMs(refusals, undefined, at(1)))).toEqual([500, 1000, 2000]);
    expect(carrierRetryDelayMs(20, undefined, at(1))).toBe(CARRIER_BACKOFF_CAP_MS);
  });

  it("never comes back before the carrier's Retry-After, spread over the half of it after", () => {
    expect(carrierRetryDelayMs(1, 3_000, at(0))).toBe(3_000);
    expect(carrierRetryDelayMs(1, 3_000, at(1))).toBe(4_500);
    // A backoff already longer than the Retry-After is kept.
    expect(carrierRetryDelayMs(7, 1_000, at(0))).toBe(16_000);
  });

  it('waits no longer than MAX_RETRY_AFTER_MS (and its spread) for a Retry-After of a day or years', () => {
    for (const asked of [86_400_000, 1e12]) {
      expect(carrierRetryDelayMs(1, asked, at(0))).toBe(MAX_RETRY_AFTER_MS);
      expect(carrierRetryDelayMs(1, asked, at(1))).toBe(MAX_RETRY_AFTER_MS * 1.5);
    }
  });

  it('takes a Retry-After of zero, or none that parsed, for none', () => {
    expect(carrierRetryDelayMs(1, 0, at(0))).toBe(250);
    expect(carrierRetryDelayMs(1, Number.NaN, at(0))).toBe(250);
  });
});
