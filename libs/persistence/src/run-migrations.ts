import { DataSource, Migration, MigrationExecutor } from 'typeorm';

/** Any constant works; every process that migrates must use the same one. */
const MIGRATION_LOCK_ID = 727_011_001;

/**
 * Applies pending migrations in one transaction while holding a Postgres
 * advisory lock, so replicas that boot together never race on the schema:
 * the others wait for the lock as long as the first one migrates, then find
 * nothing to do. Lock, wait and migrations share one connection, on which
 * the pool's statement timeout (meant for requests) is lifted: it would
 * cancel the wait of a replica behind a long migration, and any migration
 * statement that runs past it.
 */
export async function runMigrations(dataSource: DataSource): Promise<Migration[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SET statement_timeout = 0');
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'all';
    return await executor.executePendingMigrations();
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    // Back to the pool with the pool's timeout.
    await runner.query('RESET statement_timeout').catch(() => undefined);
    await runner.release();
  }
}
