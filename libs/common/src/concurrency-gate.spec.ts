import { ConcurrencyGate } from './concurrency-gate';

describe('ConcurrencyGate', () => {
  /** A task that records how many run beside it, and ends when told to. */
  function tracked(gate: ConcurrencyGate, log: { now: number; most: number; order: number[] }, id: number) {
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const result = gate.run(async () => {
      log.now += 1;
      log.most = Math.max(log.most, log.now);
      log.order.push(id);
      await done;
      log.now -= 1;
      return id;
    });
    return { result, finish };
  }

  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('runs at most its limit at once, the rest in the order they came', async () => {
    const gate = new ConcurrencyGate(2);
    const log = { now: 0, most: 0, order: [] as number[] };
    const tasks = [1, 2, 3, 4, 5].map((id) => tracked(gate, log, id));
    await settle();
    expect(log.order).toEqual([1, 2]);
    tasks[1].finish();
    await settle();
    expect(log.order).toEqual([1, 2, 3]);
    for (const task of tasks) task.finish();
    expect(await Promise.all(tasks.map((task) => task.result))).toEqual([1, 2, 3, 4, 5]);
    expect(log.order).toEqual([1, 2, 3, 4, 5]);
    expect(log.most).toBe(2);
  });

  it('frees the place of a task that fails, and passes its error on', async () => {
    const gate = new ConcurrencyGate(1);
    await expect(gate.run(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await expect(gate.run(async () => 'next')).resolves.toBe('next');
  });

  it('runs a task through tryRun only while a place is free, and takes that place', async () => {
    const gate = new ConcurrencyGate(1);
    let release: () => void = () => undefined;
    const first = gate.tryRun(() => new Promise<string>((resolve) => (release = () => resolve('first'))));
    expect(first).not.toBeNull();
    const task = jest.fn(async () => 'second');
    expect(gate.tryRun(task)).toBeNull();
    expect(task).not.toHaveBeenCalled();
    release();
    await expect(first).resolves.toBe('first');
    await expect(gate.tryRun(task)).resolves.toBe('second');
  });
});

