export interface BatcherOptions {
  /** Items one flush takes at most. */
  maxBatch: number;
  /** Flushes running at once; the next batch forms while they run. */
  maxInFlight: number;
}

interface Pending<I, O> {
  item: I;
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

  constructor(
    private readonly flush: (items: I[]) => Promise<Array<O | Error>>,
    private readonly options: BatcherOptions,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
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
