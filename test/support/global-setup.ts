import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// Global setup runs outside Jest's module mapping: import the files, not the `@app/*` barrels.
import { createDataSource } from '../../libs/persistence/src/create-data-source';
import { ensureDatabase } from '../../libs/persistence/src/ensure-database';
import { runMigrations } from '../../libs/persistence/src/run-migrations';

const BASE_DATABASE_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Creates this run's database (migrated), queue prefix and artifacts directory. */
export default async function globalSetup(): Promise<void> {
  const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/va_test_${runId}`;
  const databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  const dataSource = createDataSource({ url: databaseUrl, poolSize: 2 });
  await dataSource.initialize();
  try {
    await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
  process.env.TEST_DATABASE_URL = databaseUrl;
  process.env.TEST_QUEUE_PREFIX = `{va-test-${runId}}`;
  process.env.TEST_ARTIFACTS_DIR = mkdtempSync(join(tmpdir(), `va-test-${runId}-`));
}
