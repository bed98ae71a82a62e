import { RecentMap } from './recent-map';

describe('RecentMap', () => {
  it('keeps at most its limit, forgetting the oldest stored entry first', () => {
    const map = new RecentMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    expect(map.size).toBe(2);
    expect(map.has('a')).toBe(false);
    expect(map.get('b')).toBe(2);
    expect(map.get('c')).toBe(3);
  });

  it('makes a key stored again the most recent one', () => {
    const map = new RecentMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 10);
    map.set('c', 3);
    expect(map.get('a')).toBe(10);
    expect(map.has('b')).toBe(false);
    expect(map.has('c')).toBe(true);
  });

  it('answers undefined for a key it never held or has forgotten', () => {
    const map = new RecentMap<number, string>(1);
    expect(map.get(1)).toBeUndefined();
    map.set(1, 'one');
    map.set(2, 'two');
    expect(map.get(1)).toBeUndefined();
  });
});
