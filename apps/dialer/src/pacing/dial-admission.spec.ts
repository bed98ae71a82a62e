import { rateWindow } from './dial-admission';

describe('rateWindow', () => {
  it('counts a whole number of calls per second over one rolling second', () => {
    expect(rateWindow(3)).toEqual({ limit: 3, windowMs: 1000 });
    expect(rateWindow(10_000)).toEqual({ limit: 10_000, windowMs: 1000 });
  });

  it('allows one call per window below one call a second', () => {
    expect(rateWindow(0.2)).toEqual({ limit: 1, windowMs: 5000 });
  });

  it('holds a rate stored below the floor the API now checks (one call every 1,000 s) to that floor', () => {
    expect(rateWindow(1e-300)).toEqual({ limit: 1, windowMs: 1_000_000 });
    expect(rateWindow(0.001)).toEqual({ limit: 1, windowMs: 1_000_000 });
  });

  it('rounds a fractional rate up to whole calls in any second (pacing keeps the average)', () => {
    // 2.5 calls/s: at most 3 in any second; at most 2 would hold the average at 2.
    expect(rateWindow(2.5)).toEqual({ limit: 3, windowMs: 1000 });
  });
});
