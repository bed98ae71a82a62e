import { rateWindow } from './dial-admission';

describe('rateWindow', () => {
  it('counts a whole number of calls per second over one rolling second', () => {
    expect(rateWindow(3)).toEqual({ limit: 3, windowMs: 1000 });
    expect(rateWindow(10_000)).toEqual({ limit: 10_000, windowMs: 1000 });
  });

  it('allows one call per window below one call a second', () => {
    expect(rateWindow(0.2)).toEqual({ limit: 1, windowMs: 5000 });
  });

  it('keeps a fractional rate at or under its average in any window', () => {
    // 2.5 calls/s: 2 in any 800 ms.
    expect(rateWindow(2.5)).toEqual({ limit: 2, windowMs: 800 });
  });
});
