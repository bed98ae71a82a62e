import { DataSource } from 'typeorm';
import { CallsQueue, PacingInstants } from '@app/queue';
import { CANCELS_SETTLE_MS, CanceledRunInstants } from './canceled-run-instants.service';

/** The service's decisions with Postgres and Redis stood in for: when it looks, and what it gives back. */
describe('CanceledRunInstants', () => {
  let queued: Map<number, boolean | Error>;
  let looks: number[];
  let forgotten: number[];
  let discarded: number[];
  let service: CanceledRunInstants;

  beforeEach(() => {
    jest.useFakeTimers();
    queued = new Map();
    looks = [];
    forgotten = [];
    discarded = [];
    const dataSource = {
      query: async (_sql: string, [configurationId]: [number]) => {
        looks.push(configurationId);
        const answer = queued.get(configurationId) ?? false;
        if (answer instanceof Error) throw answer;
        return [{ queued: answer }];
      },
    } as unknown as DataSource;
    const instants = { forgetReserved: async (configurationId: number) => (forgotten.push(configurationId), true) } as unknown as PacingInstants;
    const calls = { discardPlaceCall: async (runId: number) => (discarded.push(runId), true) } as unknown as CallsQueue;
    service = new CanceledRunInstants(dataSource, instants, calls);
  });
  afterEach(() => jest.useRealTimers());

  it("drops each canceled run's job, and looks at the configuration once, a settling time after its last cancel", async () => {
    service.queuedRunCanceled(1, 7);
    await jest.advanceTimersByTimeAsync(CANCELS_SETTLE_MS - 100);
    service.queuedRunCanceled(2, 7);
    service.queuedRunCanceled(3, 8);
    await jest.advanceTimersByTimeAsync(CANCELS_SETTLE_MS - 100);

    expect(discarded).toEqual([1, 2, 3]);
    expect(looks).toEqual([]);
    await jest.advanceTimersByTimeAsync(100);
    expect(looks).toEqual([7, 8]);
    expect(forgotten).toEqual([7, 8]);
  });

  it('gives nothing back while a run of the configuration is still queued', async () => {
    queued.set(7, true);
    service.queuedRunCanceled(1, 7);
    await jest.advanceTimersByTimeAsync(CANCELS_SETTLE_MS);

    expect(looks).toEqual([7]);
    expect(forgotten).toEqual([]);
  });

  it('looks again after a failure, three times in all', async () => {
    queued.set(7, new Error('Connection terminated'));
    service.queuedRunCanceled(1, 7);
    await jest.advanceTimersByTimeAsync(CANCELS_SETTLE_MS * 5);
    expect(looks).toEqual([7, 7, 7]);

    queued.set(8, new Error('Connection terminated'));
    service.queuedRunCanceled(2, 8);
    await jest.advanceTimersByTimeAsync(CANCELS_SETTLE_MS);
    queued.delete(8);
    await jest.advanceTimersByTimeAsync(CANCELS_SETTLE_MS);
    expect(forgotten).toEqual([8]);
  });

  it('does not hold a shutdown for longer than 2 s when Postgres or Redis does not answer', async () => {
    const hanging = new CanceledRunInstants(
      { query: () => new Promise(() => undefined) } as unknown as DataSource,
      {} as PacingInstants,
      { discardPlaceCall: async () => true } as unknown as CallsQueue,
    );
    hanging.queuedRunCanceled(1, 7);
    let shutDown = false;
    const shutdown = hanging.beforeApplicationShutdown().then(() => (shutDown = true));
    await jest.advanceTimersByTimeAsync(1_999);
    expect(shutDown).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    await shutdown;
    expect(shutDown).toBe(true);
  });

  it('looks at what it has pending before the gateway shuts down', async () => {
    service.queuedRunCanceled(1, 7);
    await service.beforeApplicationShutdown();

    expect(forgotten).toEqual([7]);
    await jest.advanceTimersByTimeAsync(CANCELS_SETTLE_MS * 2);
    expect(looks).toEqual([7]);
  });
});
