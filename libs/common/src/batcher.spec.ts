import { Batcher } from './batcher';

describe('Batcher', () => {
  it('groups the calls of one turn into one flush, answering each in order', async () => {
    const flushes: number[][] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        flushes.push(items);
        return items.map((item) => item * 10);
      },
      { maxBatch: 100, maxInFlight: 1 },
    );
    const answers = await Promise.all([1, 2, 3].map((item) => batcher.submit(item)));
    expect(answers).toEqual([10, 20, 30]);
    expect(flushes).toEqual([[1, 2, 3]]);
  });

  it('forms the next batch while the running flushes use every slot', async () => {
    const flushes: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const batcher = new Batcher<number, number>(
      async (items) => {
        flushes.push(items);
        if (flushes.length === 1) await gate;
        return items;
      },
      { maxBatch: 100, maxInFlight: 1 },
    );
    const first = batcher.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    const rest = [2, 3, 4].map((item) => batcher.submit(item));
    await new Promise((resolve) => setImmediate(resolve));
    expect(flushes).toEqual([[1]]);
    release();
    await Promise.all([first, ...rest]);
    expect(flushes).toEqual([[1], [2, 3, 4]]);
  });

  it('caps a batch at maxBatch items', async () => {
    const sizes: number[] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        sizes.push(items.length);
        return items;
      },
      { maxBatch: 2, maxInFlight: 1 },
    );
    await Promise.all([1, 2, 3, 4, 5].map((item) => batcher.submit(item)));
    expect(sizes).toEqual([2, 2, 1]);
  });

  it('fails only the items the flush answered with an error', async () => {
    const batcher = new Batcher<number, number>(
      async (items) => items.map((item) => (item === 2 ? new Error('two is bad') : item)),
      { maxBatch: 10, maxInFlight: 1 },
    );
    const outcomes = await Promise.allSettled([1, 2, 3].map((item) => batcher.submit(item)));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toEqual(new Error('two is bad'));
  });

  it('fails the whole batch when the flush throws, and goes on with the next', async () => {
    let calls = 0;
    const batcher = new Batcher<number, number>(
      async (items) => {
        calls += 1;
        if (calls === 1) throw new Error('database away');
        return items;
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const first = await Promise.allSettled([1, 2].map((item) => batcher.submit(item)));
    expect(first.every((outcome) => outcome.status === 'rejected')).toBe(true);
    await expect(batcher.submit(3)).resolves.toBe(3);
  });

  it('refuses to resolve an item the flush gave no answer for', async () => {
    const batcher = new Batcher<number, number>(async (items) => items.slice(1), { maxBatch: 10, maxInFlight: 1 });
    const outcomes = await Promise.allSettled([1, 2].map((item) => batcher.submit(item)));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected']);
  });

  describe('with a bound on waiting, while every flush is held', () => {
    const refusal = (reason: 'full' | 'late') => new Error(`refused: ${reason}`);

    /** A batcher whose first flush is held until `release`; answers what each flush took. */
    function stalled(waiting: { maxWaiting: number; maxWaitMs: number }) {
      const flushed: number[][] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const batcher = new Batcher<number, number>(
        async (items) => {
          flushed.push(items);
          await gate;
          return items;
        },
        { maxBatch: 2, maxInFlight: 1, waiting: { ...waiting, refusal } },
      );
      return { batcher, flushed, release };
    }
    const turn = () => new Promise((resolve) => setImmediate(resolve));

    it('refuses at once an item past maxWaiting waiting, and flushes the rest once the flush is free', async () => {
      const { batcher, flushed, release } = stalled({ maxWaiting: 3, maxWaitMs: 60_000 });
      const held = batcher.submit(1);
      await turn();
      const waiting = [2, 3, 4].map((item) => batcher.submit(item));
      await expect(batcher.submit(5)).rejects.toThrow('refused: full');
      release();
      await expect(Promise.all([held, ...waiting])).resolves.toEqual([1, 2, 3, 4]);
      expect(flushed).toEqual([[1], [2, 3], [4]]);
    });

    it('refuses the items that waited past maxWaitMs without ever flushing them, and leaves the flush under way alone', async () => {
      const { batcher, flushed, release } = stalled({ maxWaiting: 100, maxWaitMs: 50 });
      const held = batcher.submit(1);
      await turn();
      const early = [batcher.submit(2), batcher.submit(3)];
      await new Promise((resolve) => setTimeout(resolve, 30));
      const later = batcher.submit(4);
      // At 50 ms the first two waited long enough; the third has 30 ms to go.
      await expect(Promise.all(early.map((item) => item.catch((error: Error) => error.message)))).resolves.toEqual([
        'refused: late',
        'refused: late',
      ]);
      await expect(later).rejects.toThrow('refused: late');
      release();
      await expect(held).resolves.toBe(1);
      expect(flushed).toEqual([[1]]);
      // Free again, it takes new items at once.
      await expect(batcher.submit(5)).resolves.toBe(5);
    });
  });
});
