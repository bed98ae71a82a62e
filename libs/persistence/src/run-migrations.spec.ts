import { randomBytes } from 'node:crypto';
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { testRunResources } from '../../../test/support/test-run-id';
import { waitFor } from '../../../test/support/wait-for';
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
    let settled = false;
    const migrated = runMigrations(dataSource).finally(() => (settled = true));
    try {
      // Postgres' own record of the wait: a request for the migration lock, not granted, whose statement has run
      // for twice the pool's statement timeout (which would have cancelled it at 300 ms) and still waits.
      await waitFor(
        async () => {
          const [waiting] = await runner.query(
            `SELECT a.pid
               FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.locktype = 'advisory' AND NOT l.granted AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND a.query_start < clock_timestamp() - interval '600 milliseconds'`,
            [MIGRATION_LOCK_ID],
          );
          return waiting;
        },
        { what: 'the migration to wait for the lock past the statement timeout' },
      );
      expect(settled).toBe(false);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);
      await runner.release();
    }

    expect(await migrated).toEqual([]);
    // The connection went back to the pool with the pool's timeout.
    expect(await dataSource.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '300ms' }]);
  });
  describe('a table another transaction holds', () => {
    const suffix = randomBytes(4).toString('hex');
    const table = `lock_probe_${suffix}`;
    let probe: DataSource;
    let reader: DataSource;
    /** Looks at Postgres' locks while the others wait. */
    let observer: DataSource;

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
      observer = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
      await Promise.all([probe.initialize(), reader.initialize(), observer.initialize()]);
      await holder.query(`CREATE TABLE ${table} (id integer)`);
    });
    afterAll(async () => {
      await holder.query(`DROP TABLE IF EXISTS ${table}, lock_probe_migrations_${suffix}`);
      await Promise.all([probe?.destroy(), reader?.destroy(), observer?.destroy()]);
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

    /** The requests for a lock on the probe table that wait, each with the backends it waits behind, as Postgres sees them. */
    const lockWaits = async (): Promise<Array<{ pid: number; mode: string; blocked_by: number[] }>> =>
      observer.query(
        `SELECT pid, mode, pg_blocking_pids(pid) AS blocked_by FROM pg_locks WHERE relation = to_regclass($1) AND NOT granted`,
        [table],
      );

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
      // A lock timeout long enough to see a read queue behind the migration's ALTER before it gives up, on a machine
      // that stalls for a second now and then.
      const migrated = runMigrations(probe, { lockTimeoutMs: 3_000, attempts: 50, retryDelayMs: () => 100, onRetry: ({ message }) => retries.push(message) });
      try {
        const alter = await waitFor(async () => (await lockWaits()).find((wait) => wait.mode === 'AccessExclusiveLock')?.pid, {
          what: "the migration's ALTER to wait for the table",
        });
        // A read of the table now queues behind the waiting ALTER, as every query on the table would...
        const [{ pid: readerPid }] = await reader.query('SELECT pg_backend_pid() AS pid');
        let readDone = false;
        const read = reader.query(`SELECT count(*) FROM ${table}`).then(() => (readDone = true));
        const queuedBehind = await waitFor(async () => (await lockWaits()).find((wait) => wait.pid === readerPid)?.blocked_by, {
          what: 'the read to queue behind the ALTER',
        });
        expect(queuedBehind).toEqual([alter]);
        // ...and is let through when the ALTER gives up at its lock timeout, while the table is still held: without
        // the timeout it would have waited as long as the ALTER, until the table's holder let go.
        await waitFor(async () => (readDone ? true : undefined), { what: 'the read to be let through while the table is held' });
        await read;
        expect(await columns()).toEqual(['id']);
      } finally {
        await release();
      }

      const applied = await migrated;

      expect(applied.map((migration) => migration.name)).toEqual([migrationName]);
      expect(retries.length).toBeGreaterThanOrEqual(1);
      expect(retries[0]).toMatch(/lock timeout/);
      expect(await columns()).toEqual(['added', 'id']);
      // The connection went back to the pool with no lock timeout of its own.
      expect(await probe.query('SHOW lock_timeout')).toEqual([{ lock_timeout: '0' }]);
    });
  });
});
