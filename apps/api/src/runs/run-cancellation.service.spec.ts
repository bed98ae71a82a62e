import { DataSource } from 'typeorm';
import { createDataSource, WorkflowRunStore } from '@app/persistence';
import { ConcurrencyLimiter } from '@app/queue';
import { CredentialsCipher, TelephonyProviders } from '@app/telephony';
import { storeQueuedRuns } from '../../../../test/support/queued-runs';
import { testRunResources } from '../../../../test/support/test-run-id';
import { CanceledRunInstants } from './canceled-run-instants.service';
import { RunCancellation } from './run-cancellation.service';

/** Against this test run's Postgres: which cancel wins against a dialer's claim is decided by the row. */
describe('RunCancellation', () => {
  let dataSource: DataSource;
  let store: WorkflowRunStore;
  let cancellation: RunCancellation;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 2 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
    // No carrier is reached in these cases.
    cancellation = new RunCancellation(
      dataSource,
      store,
      {} as TelephonyProviders,
      {} as CredentialsCipher,
      { queuedRunCanceled: () => undefined } as unknown as CanceledRunInstants,
      { release: async () => undefined } as unknown as ConcurrencyLimiter,
    );
  });
  afterAll(() => dataSource?.destroy());

  const queuedRun = async (): Promise<number> => (await storeQueuedRuns(store, 1, { organizationId: 900_201 }))[0];

  it('cancels a run that is still queued', async () => {
    const runId = await queuedRun();
    await expect(cancellation.cancel((await store.findById(runId))!)).resolves.toBe('canceled');
    expect(await store.findById(runId)).toMatchObject({ status: 'canceled', isCompleted: true, endReason: 'canceled' });
  });

  it('cancels a run a dialer claimed after it was read and handed back to the queue before it was read again', async () => {
    const runId = await queuedRun();
    const transition = store.transition.bind(store);
    let raced = false;
    // The cancel's move misses the claimed run; the carrier throttles the dial, and the run is queued again.
    const moves = jest.spyOn(store, 'transition').mockImplementation(async (...args) => {
      if (raced || args[0] !== runId || args[1] !== 'canceled') return transition(...args);
      raced = true;
      await transition(runId, 'dialing', 'dialer.dialing');
      const missed = await transition(...args);
      await transition(runId, 'queued', 'dialer.retry', {}, { reason: 'carrier_throttled' }, ['dialing']);
      return missed;
    });
    try {
      await expect(cancellation.cancel((await store.findById(runId))!)).resolves.toBe('canceled');
    } finally {
      moves.mockRestore();
    }
    expect(raced).toBe(true);
    expect(await store.findById(runId)).toMatchObject({ status: 'canceled', endReason: 'canceled' });
  });

  it('answers a run another cancel ended after it was read as canceled, as asked, and leaves it as that cancel did', async () => {
    const runId = await queuedRun();
    const readAsQueued = (await store.findById(runId))!;
    await expect(cancellation.cancel((await store.findById(runId))!)).resolves.toBe('canceled');
    const canceled = await store.findById(runId);

    await expect(cancellation.cancel(readAsQueued)).resolves.toBe('canceled');
    expect(await store.findById(runId)).toEqual(canceled);
  });

  it('leaves alone a run a dialer claimed after it was read as queued, and answers 409 while its call has no id', async () => {
    const runId = await queuedRun();
    const readAsQueued = (await store.findById(runId))!;
    await store.transition(runId, 'dialing', 'dialer.dialing');

    await expect(cancellation.cancel(readAsQueued)).rejects.toMatchObject({ status: 409, code: 'run_not_cancelable' });
    expect(await store.findById(runId)).toMatchObject({ status: 'dialing', isCompleted: false, endReason: null });
  });
});
