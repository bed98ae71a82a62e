import { ExpiringCache } from './expiring-cache';

describe('ExpiringCache', () => {
  afterEach(() => jest.useRealTimers());

  it('answers from memory within the time to live, and loads again after it', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const cache = new ExpiringCache<string, number>(2000);
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.get('a', load)).toBe(1);
    jest.setSystemTime(1_001_999);
    expect(await cache.get('a', load)).toBe(1);
    jest.setSystemTime(1_002_000);
    expect(await cache.get('a', load)).toBe(2);
  });

  it('shares one load between concurrent misses of a key', async () => {
    const cache = new ExpiringCache<string, number>(2000);
    let loads = 0;
    const load = async () => ++loads;
    const answers = await Promise.all([cache.get('a', load), cache.get('a', load), cache.get('b', load)]);
    expect(answers).toEqual([1, 1, 2]);
  });

  it('answers a value its keep test refuses to every concurrent waiter, and does not keep it', async () => {
    const cache = new ExpiringCache<string, number | null>(60_000);
    let loads = 0;
    const load = async () => {
      loads += 1;
      return null;
    };
    const isValue = (value: number | null) => value !== null;
    expect(await Promise.all([cache.get('k', load, isValue), cache.get('k', load, isValue)])).toEqual([null, null]);
    expect(loads).toBe(1);
    expect(cache.size).toBe(0);
    await cache.get('k', load, isValue);
    expect(loads).toBe(2);
  });

  it('does not keep a failed load', async () => {
    const cache = new ExpiringCache<string, number>(2000);
    await expect(cache.get('a', () => Promise.reject(new Error('database away')))).rejects.toThrow('database away');
    await Promise.resolve();
    expect(await cache.get('a', async () => 7)).toBe(7);
  });

  it('forgets the entries picked, keeps the others, and discards loads under way', async () => {
    const cache = new ExpiringCache<string, { org: number }>(60_000);
    await cache.get('a', async () => ({ org: 1 }));
    await cache.get('b', async () => ({ org: 2 }));
    let finish!: (value: { org: number }) => void;
    const slow = cache.get('c', () => new Promise((resolve) => (finish = resolve)));
    cache.forget((_key, value) => value.org === 1);
    finish({ org: 3 });
    await slow;
    expect(await cache.get('a', async () => ({ org: 10 }))).toEqual({ org: 10 });
    expect(await cache.get('b', async () => ({ org: 20 }))).toEqual({ org: 2 });
    expect(await cache.get('c', async () => ({ org: 30 }))).toEqual({ org: 30 });
  });

  it('loads every time when the time to live is 0', async () => {
    const cache = new ExpiringCache<string, number>(0);
    let loads = 0;
    await cache.get('a', async () => ++loads);
    expect(await cache.get('a', async () => ++loads)).toBe(2);
  });

  it('stays within its size by dropping the oldest entry', async () => {
    const cache = new ExpiringCache<number, number>(60_000, 2);
    for (const key of [1, 2, 3]) await cache.get(key, async () => key);
    expect(cache.size).toBe(2);
    expect(await cache.get(1, async () => 100)).toBe(100);
  });
});
