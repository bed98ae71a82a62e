export interface BatcherOptions {
  /** Items one flush takes at most. */
  maxBatch: number;
  /** Flushes running at once; the next batch forms while they run. */
  maxInFlight: number;
  /**
   * A bound on waiting for a flush to take an item, when the flushes stall
   * (the database holding every one of them for its read timeout): items
   * past `maxWaiting` waiting are refused at once, and one waiting longer
   * than `maxWaitMs` is refused then, never flushed. Refused with `refusal`.
   */
  waiting?: { maxWaiting: number; maxWaitMs: number; refusal: (reason: 'full' | 'late') => Error };
}

interface Pending<I, O> {
  item: I;
  /** When it was submitted (`performance.now()`), for `waiting.maxWaitMs`. */
  at: number;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Groups concurrent calls into one round trip each (group commit): a call
 * joins the batch that is forming, and a batch leaves as soon as a flush slot
 * is free, so an idle service adds no delay and a busy one sends fewer,
 * larger statements. `flush` answers one result per item, in order: a value,
 * or an Error that fails that item alone. A thrown error fails the batch.
 */
export class Batcher<I, O> {
  private pending: Array<Pending<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;
  /** Armed while items wait, to refuse those past `waiting.maxWaitMs`. */
  private lateCheck: NodeJS.Timeout | null = null;

  constructor(
    private readonly flush: (items: I[]) => Promise<Array<O | Error>>,
    private readonly options: BatcherOptions,
  ) {}

  submit(item: I): Promise<O> {
    const { waiting } = this.options;
    if (waiting && this.pending.length >= waiting.maxWaiting) return Promise.reject(waiting.refusal('full'));
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, at: performance.now(), resolve, reject });
      this.schedule();
      if (waiting && this.lateCheck === null) this.armLateCheck(waiting.maxWaitMs);
    });
  }

  /** Refuses the items that have waited past `maxWaitMs`, and looks again when the oldest left will have. */
  private armLateCheck(delayMs: number): void {
    const waiting = this.options.waiting!;
    this.lateCheck = setTimeout(() => {
      this.lateCheck = null;
      const now = performance.now();
      let late = 0;
      while (late < this.pending.length && now - this.pending[late].at >= waiting.maxWaitMs) late++;
      for (const entry of this.pending.splice(0, late)) entry.reject(waiting.refusal('late'));
      if (this.pending.length > 0) this.armLateCheck(Math.max(1, this.pending[0].at + waiting.maxWaitMs - now));
    }, delayMs);
    this.lateCheck.unref();
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.pending.length === 0) return;
    this.scheduled = true;
    // Wait for the calls that arrive in this turn of the event loop to join.
    setImmediate(() => {
      this.scheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    while (this.inFlight < this.options.maxInFlight && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.options.maxBatch);
      this.inFlight += 1;
      void this.run(batch).finally(() => {
        this.inFlight -= 1;
        this.schedule();
      });
    }
  }

  private async run(batch: Array<Pending<I, O>>): Promise<void> {
    let results: Array<O | Error>;
    try {
      results = await this.flush(batch.map((entry) => entry.item));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    batch.forEach((entry, index) => {
      const result = index < results.length ? results[index] : new Error('The batch answered fewer results than items');
      if (result instanceof Error) entry.reject(result);
      else entry.resolve(result);
    });
  }
}
