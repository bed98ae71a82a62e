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

  it('leaves alone a run a dialer claimed after it was read as queued, and answers 409 while its call has no id', async () => {
    const runId = await queuedRun();
    const readAsQueued = (await store.findById(runId))!;
    await store.transition(runId, 'dialing', 'dialer.dialing');

    await expect(cancellation.cancel(readAsQueued)).rejects.toMatchObject({ status: 409, code: 'run_not_cancelable' });
    expect(await store.findById(runId)).toMatchObject({ status: 'dialing', isCompleted: false, endReason: null });
  });
});
