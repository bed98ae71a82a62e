/**
 * Names shared by every test file of one `npm test` run: its own database,
 * queue prefix and artifacts directory, so a run never touches data it did
 * not create. Global setup writes them into the environment.
 */
export interface TestRunResources {
  databaseUrl: string;
  queuePrefix: string;
  artifactsDir: string;
}

export function testRunResources(): TestRunResources {
  const databaseUrl = process.env.TEST_DATABASE_URL;
  const queuePrefix = process.env.TEST_QUEUE_PREFIX;
  const artifactsDir = process.env.TEST_ARTIFACTS_DIR;
  if (!databaseUrl || !queuePrefix || !artifactsDir) {
    throw new Error('Test resources are missing: run the tests through jest (npm test), which sets them up');
  }
  return { databaseUrl, queuePrefix, artifactsDir };
}

/**
 * A database URL beside this run's test database, named `<run's>_<suffix>`,
 * for one suite of its own: the suite creates it (or has a command create it)
 * and drops it.
 */
export function scratchDatabaseUrl(suffix: string): string {
  const url = new URL(testRunResources().databaseUrl);
  url.pathname = `${url.pathname}_${suffix}`;
  return url.toString();
}
