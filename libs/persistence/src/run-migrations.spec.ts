import { DataSource } from 'typeorm';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { runMigrations } from './run-migrations';

const MIGRATION_LOCK_ID = 727_011_001;

/** Against this test run's (migrated) database. */
describe('runMigrations', () => {
  let dataSource: DataSource;
  let holder: DataSource;

  beforeAll(async () => {
    // A pool of one connection whose statements time out after 300 ms, as the apps' do after 15 s.
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1, statementTimeoutMs: 300 });
    holder = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await Promise.all([dataSource.initialize(), holder.initialize()]);
  });
  afterAll(() => Promise.all([dataSource?.destroy(), holder?.destroy()]));

  it("waits for another replica's migration lock past the pool's statement timeout, then finds nothing to do", async () => {
    const runner = holder.createQueryRunner();
    await runner.connect();
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        void runner
          .query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID])
          .then(() => runner.release())
          .then(resolve);
      }, 1_000),
    );
    const started = Date.now();

    const applied = await runMigrations(dataSource);

    expect(applied).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    await released;
    // The connection went back to the pool with the pool's timeout.
    expect(await dataSource.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '300ms' }]);
  });
});
