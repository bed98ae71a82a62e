import { DataSource, Migration } from 'typeorm';

/** Any constant works; every process that migrates must use the same one. */
const MIGRATION_LOCK_ID = 727_011_001;

/**
 * Applies pending migrations in one transaction while holding a Postgres
 * advisory lock, so replicas that boot together never race on the schema.
 */
export async function runMigrations(dataSource: DataSource): Promise<Migration[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    return await dataSource.runMigrations({ transaction: 'all' });
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await runner.release();
  }
}
