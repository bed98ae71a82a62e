import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { runMigrations } from './run-migrations';
import { SilentTypeormLogger } from './silent-typeorm-logger';

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
  describe('a table another transaction holds', () => {
    const suffix = randomBytes(4).toString('hex');
    const table = `lock_probe_${suffix}`;
    let probe: DataSource;
    let reader: DataSource;

    const migrationName = `AddProbeColumn${Date.now()}`;

    /** A pending migration of its own, recorded in a migrations table of its own, that alters the probe table. */
    class AddProbeColumn implements MigrationInterface {
      name = migrationName;
      async up(runner: QueryRunner): Promise<void> {
        await runner.query(`ALTER TABLE ${table} ADD COLUMN added integer`);
      }
      async down(runner: QueryRunner): Promise<void> {
        await runner.query(`ALTER TABLE ${table} DROP COLUMN added`);
      }
    }

    beforeAll(async () => {
      probe = new DataSource({
        type: 'postgres',
        url: testRunResources().databaseUrl,
        migrations: [AddProbeColumn],
        migrationsTableName: `lock_probe_migrations_${suffix}`,
        logger: new SilentTypeormLogger(),
        extra: { max: 1 },
      });
      reader = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
      await Promise.all([probe.initialize(), reader.initialize()]);
      await holder.query(`CREATE TABLE ${table} (id integer)`);
    });
    afterAll(async () => {
      await holder.query(`DROP TABLE IF EXISTS ${table}, lock_probe_migrations_${suffix}`);
      await Promise.all([probe?.destroy(), reader?.destroy()]);
    });

    /** Holds a read lock on the probe table, as a long report or an idle transaction would, until released. */
    async function holdTable(): Promise<() => Promise<void>> {
      const runner = holder.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      await runner.query(`SELECT count(*) FROM ${table}`);
      return async () => {
        await runner.commitTransaction();
        await runner.release();
      };
    }

    const columns = async () =>
      (await reader.query(`SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY column_name`, [table])).map(
        (row: { column_name: string }) => row.column_name,
      );

    it('gives up after its attempts with the lock error, having applied nothing and freed the migration lock', async () => {
      const release = await holdTable();
      const retries: number[] = [];
      try {
        const failure = await runMigrations(probe, { lockTimeoutMs: 100, attempts: 3, retryDelayMs: () => 50, onRetry: ({ attempt }) => retries.push(attempt) }).then(
          () => undefined,
          (error: unknown) => error,
        );

        expect(failure).toMatchObject({ driverError: expect.objectContaining({ code: '55P03' }) });
        expect(retries).toEqual([1, 2]);
        expect(await columns()).toEqual(['id']);
        expect(await reader.query(`SELECT pg_try_advisory_lock($1) AS got`, [MIGRATION_LOCK_ID])).toEqual([{ got: true }]);
        await reader.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);
      } finally {
        await release();
      }
    });

    it('never keeps queries on the table waiting behind it for longer than its lock timeout, and applies once the table is free', async () => {
      const release = await holdTable();
      const retries: string[] = [];
      const migrated = runMigrations(probe, { lockTimeoutMs: 200, attempts: 50, retryDelayMs: () => 100, onRetry: ({ message }) => retries.push(message) });
      // While the migration waits for its lock, reads of the table queue behind it: for its lock timeout at most.
      const readTimes: number[] = [];
      const until = Date.now() + 1_500;
      while (Date.now() < until) {
        const started = Date.now();
        await reader.query(`SELECT count(*) FROM ${table}`);
        readTimes.push(Date.now() - started);
        await sleep(20);
      }
      await release();

      const applied = await migrated;

      expect(applied.map((migration) => migration.name)).toEqual([migrationName]);
      expect(retries.length).toBeGreaterThanOrEqual(3);
      expect(retries[0]).toMatch(/lock timeout/);
      // Without the timeout the first read would have waited for the whole 1.5 s the table was held.
      expect(Math.max(...readTimes)).toBeLessThan(1_000);
      expect(await columns()).toEqual(['added', 'id']);
      // The connection went back to the pool with no lock timeout of its own.
      expect(await probe.query('SHOW lock_timeout')).toEqual([{ lock_timeout: '0' }]);
    });
  });
});
