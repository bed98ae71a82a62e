import { doublingDelay } from './doubling-delay';

describe('doublingDelay', () => {
  it('starts at the first wait and doubles with each try', () => {
    expect([1, 2, 3, 4].map((attempt) => doublingDelay(500, attempt, 60_000))).toEqual([500, 1_000, 2_000, 4_000]);
  });

  it('stops growing at the cap, however many tries came before', () => {
    expect(doublingDelay(2_000, 6, 60_000)).toBe(60_000);
    expect(doublingDelay(2_000, 5, 60_000)).toBe(32_000);
    expect(doublingDelay(1_000, 2_000, 30_000)).toBe(30_000);
  });
});
