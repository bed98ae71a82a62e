import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { storeQueuedRuns } from '../../../test/support/queued-runs';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { WorkflowRun } from './entities';
import { RUN_COLUMNS, WorkflowRunStore } from './workflow-run.store';

/**
 * Against this test run's Postgres, over a pool of one connection, so the
 * statements prepared before the schema change are the ones used after it.
 */
describe('WorkflowRunStore during a rolling deploy', () => {
  let dataSource: DataSource;
  let store: WorkflowRunStore;
  const ORG = 900_101;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  const queuedRun = async (): Promise<number> => (await storeQueuedRuns(store, 1, { organizationId: ORG, initialContext: { name: 'Ada' } }))[0];
  const claim = (runId: number) => store.transitionManyReturningRuns('dialing', 'dialer.dialing', [{ runId, fields: { fromNumber: '+15005550006' } }]);

  it('names every column of the run entity in its reads', () => {
    const entityColumns = dataSource.getMetadata(WorkflowRun).columns.map((column) => column.databaseName);
    expect([...RUN_COLUMNS].sort()).toEqual([...entityColumns].sort());
  });

  it('keeps reading and claiming runs with the statements it prepared before a migration added a column', async () => {
    const before = await queuedRun();
    expect(await claim(before)).toEqual([expect.objectContaining({ id: before, status: 'dialing' })]);
    expect(await store.findManyById([before])).toEqual([expect.objectContaining({ id: before })]);

    const column = `rolling_${randomUUID().slice(0, 8)}`;
    await dataSource.query(`ALTER TABLE workflow_runs ADD COLUMN ${column} integer`);
    try {
      const after = await queuedRun();
      expect(await claim(after)).toEqual([expect.objectContaining({ id: after, status: 'dialing', initialContext: { name: 'Ada' } })]);
      const read = await store.findManyById([before, after]);
      expect(read.map((run) => run.id).sort((a, b) => a - b)).toEqual([before, after]);
    } finally {
      await dataSource.query(`ALTER TABLE workflow_runs DROP COLUMN ${column}`);
    }
    // And again once the column is gone, as after a rollback.
    const last = await queuedRun();
    expect(await claim(last)).toEqual([expect.objectContaining({ id: last })]);
  });
});
