import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMigratedDatabase } from './test-resource-lifecycle';

const BASE_DATABASE_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Creates this run's database (migrated), queue prefix and artifacts directory. */
export default async function globalSetup(): Promise<void> {
  const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/va_test_${runId}`;
  const databaseUrl = url.toString();
  await createMigratedDatabase(databaseUrl);
  process.env.TEST_DATABASE_URL = databaseUrl;
  process.env.TEST_QUEUE_PREFIX = `{va-test-${runId}}`;
  process.env.TEST_ARTIFACTS_DIR = mkdtempSync(join(tmpdir(), `va-test-${runId}-`));
}
