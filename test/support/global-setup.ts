import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cloneDatabase, createMigratedDatabase } from './test-resource-lifecycle';
import { workerResources } from './test-run-id';

const BASE_DATABASE_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Creates this run's database (migrated), and for each of Jest's workers a
 * copy of it, a queue prefix and an artifacts directory of the worker's own.
 */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/va_test_${runId}`;
  const base = { databaseUrl: url.toString(), queuePrefix: `{va-test-${runId}}`, artifactsDir: mkdtempSync(join(tmpdir(), `va-test-${runId}-`)) };
  const workers = Math.max(1, globalConfig.maxWorkers);
  // Set first: teardown drops whatever of them was made, should making the rest fail.
  process.env.TEST_DATABASE_URL = base.databaseUrl;
  process.env.TEST_QUEUE_PREFIX = base.queuePrefix;
  process.env.TEST_ARTIFACTS_DIR = base.artifactsDir;
  process.env.TEST_WORKERS = String(workers);
  await createMigratedDatabase(base.databaseUrl);
  for (let worker = 1; worker <= workers; worker++) {
    const own = workerResources(base, worker);
    await cloneDatabase(base.databaseUrl, own.databaseUrl);
    mkdirSync(own.artifactsDir);
  }
}
