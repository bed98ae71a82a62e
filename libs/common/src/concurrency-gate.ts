/**
 * Runs at most `limit` tasks at once; the others wait their turn, in the
 * order they came. For work whose cost is its memory (a body read whole),
 * where many at once would exhaust the process, one after the other only
 * take longer.
 */
export class ConcurrencyGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** Runs `task` if a place is free now; else answers null, and `task` is not run. */
  tryRun<T>(task: () => Promise<T>): Promise<T> | null {
    return this.running < this.limit ? this.run(task) : null;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running += 1;
    try {
      return await task();
    } finally {
      // The next waiter takes this place over, so `running` stays as it is; with none waiting, the place is freed.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
