import { ExpiringCache, FoundOrMissingCache } from './expiring-cache';

describe('ExpiringCache', () => {
  afterEach(() => jest.useRealTimers());

  it('answers from memory within the time to live, and loads again after it', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const cache = new ExpiringCache<string, number>(2000);
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.get('a', load)).toBe(1);
    jest.advanceTimersByTime(1999);
    expect(await cache.get('a', load)).toBe(1);
    jest.advanceTimersByTime(1);
    expect(await cache.get('a', load)).toBe(2);
  });

  it('counts the time to live on a monotonic clock: the wall clock stepped back keeps nothing longer', async () => {
    const cache = new ExpiringCache<string, number>(50);
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.get('a', load)).toBe(1);
    // NTP steps the clock back an hour (or a VM resumes with its clock corrected).
    const stepped = Date.now() - 3_600_000;
    const wall = jest.spyOn(Date, 'now').mockImplementation(() => stepped);
    try {
      await new Promise((resolve) => setTimeout(resolve, 80));
      expect(await cache.get('a', load)).toBe(2);
    } finally {
      wall.mockRestore();
    }
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

  describe('admitting a key once loaded', () => {
    it('gives a key no place while it loads, so loads under way push nothing out', async () => {
      const cache = new ExpiringCache<string, number>(60_000, 2, true);
      await cache.get('a', async () => 1);
      await cache.get('b', async () => 2);
      let finish!: (value: number) => void;
      const pending = cache.get('c', () => new Promise((resolve) => (finish = resolve)));
      expect(cache.size).toBe(2);
      expect(await cache.get('a', async () => 10)).toBe(1);
      finish(3);
      await pending;
      await Promise.resolve();
      // Admitted now: the oldest made room.
      expect(cache.size).toBe(2);
      expect(await cache.get('c', async () => 30)).toBe(3);
      expect(await cache.get('a', async () => 10)).toBe(10);
    });

    it('does not admit a value its keep test refuses, one loaded past its time to live, or one a forget overtook', async () => {
      jest.useFakeTimers({ now: 1_000_000 });
      const cache = new ExpiringCache<string, number | null>(2000, 10, true);
      await cache.get('none', async () => null, (value) => value !== null);
      let finish!: (value: number) => void;
      const slow = cache.get('slow', () => new Promise((resolve) => (finish = resolve)));
      jest.advanceTimersByTime(2000);
      finish(1);
      await slow;
      let finishForgotten!: (value: number) => void;
      const forgotten = cache.get('forgotten', () => new Promise((resolve) => (finishForgotten = resolve)));
      cache.forget(() => false);
      finishForgotten(2);
      await forgotten;
      await Promise.resolve();
      expect(cache.size).toBe(0);
    });
  });

  describe('FoundOrMissingCache', () => {
    it('keeps what was found through any number of misses, and shares concurrent loads of one key', async () => {
      const cache = new FoundOrMissingCache<string, number | null>(60_000, (value) => value !== null, { found: 10, missing: 5 });
      let loads = 0;
      const find = (key: string) => async () => {
        loads += 1;
        return key.startsWith('real') ? 1 : null;
      };
      await cache.get('real-1', find('real-1'));
      await Promise.all(Array.from({ length: 100 }, (_, index) => cache.get(`fake-${index}`, find(`fake-${index}`))));
      expect(cache.size).toEqual({ found: 1, missing: 5 });
      loads = 0;
      expect(await cache.get('real-1', find('real-1'))).toBe(1);
      expect(await Promise.all([cache.get('real-2', find('real-2')), cache.get('real-2', find('real-2'))])).toEqual([1, 1]);
      expect(loads).toBe(1);

      cache.forget((key) => key === 'real-1');
      await cache.get('real-1', find('real-1'));
      expect(loads).toBe(2);
    });

    it('keeps a found value no longer than the time to live from the start of the load it came from, however late a caller joined it', async () => {
      jest.useFakeTimers({ now: 1_000_000 });
      try {
        const cache = new FoundOrMissingCache<string, string | null>(2000, (value) => value !== null);
        let loads = 0;
        let finish!: (value: string) => void;
        const slow = () => {
          loads += 1;
          return new Promise<string>((resolve) => (finish = resolve));
        };
        const first = cache.get('key', slow);
        jest.advanceTimersByTime(1500);
        // Joins the load under way, read (at best) 1.5 s before it asked.
        const joined = cache.get('key', slow);
        jest.advanceTimersByTime(600);
        finish('read at the start');
        await expect(Promise.all([first, joined])).resolves.toEqual(['read at the start', 'read at the start']);
        await Promise.resolve();
        // 2.1 s after the load began: nothing it read is kept (counted from the joiner's call it would be, until 3.5 s).
        expect(cache.size.found).toBe(0);
        const again = cache.get('key', async () => {
          loads += 1;
          return 'read again';
        });
        await expect(again).resolves.toBe('read again');
        expect(loads).toBe(2);
      } finally {
        jest.useRealTimers();
      }
    });
  });
});
