import { join } from 'node:path';

/**
 * Names shared by the test files one Jest worker runs, one after another, in
 * one `npm test` run: the worker's own database, queue prefix and artifacts
 * directory, so a run never touches data it did not create, and files that
 * run side by side in two workers never touch each other's. Global setup
 * creates them for every worker, and writes the run's names (which each
 * worker's add to) into the environment.
 */
export interface TestRunResources {
  databaseUrl: string;
  queuePrefix: string;
  artifactsDir: string;
}

/** The run's names, as global setup wrote them; the workers' are made from them. */
export function baseRunResources(): TestRunResources & { workers: number } {
  const databaseUrl = process.env.TEST_DATABASE_URL;
  const queuePrefix = process.env.TEST_QUEUE_PREFIX;
  const artifactsDir = process.env.TEST_ARTIFACTS_DIR;
  const workers = Number(process.env.TEST_WORKERS);
  if (!databaseUrl || !queuePrefix || !artifactsDir || !(workers >= 1)) {
    throw new Error('Test resources are missing: run the tests through jest (npm test), which sets them up');
  }
  return { databaseUrl, queuePrefix, artifactsDir, workers };
}

/** Worker `worker`'s resources (1 to the run's number of workers). */
export function workerResources(base: TestRunResources, worker: number): TestRunResources {
  return {
    databaseUrl: databaseUrlBeside(base.databaseUrl, `w${worker}`),
    queuePrefix: queuePrefixBeside(base.queuePrefix, `w${worker}`),
    artifactsDir: join(base.artifactsDir, `w${worker}`),
  };
}

/** The database `<url's>_<suffix>` on `url`'s server. */
function databaseUrlBeside(databaseUrl: string, suffix: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `${url.pathname}_${suffix}`;
  return url.toString();
}

/** The queue prefix `queuePrefix` with `-<suffix>` added inside its braces: a Redis Cluster hash tag, as the apps' own is. */
export function queuePrefixBeside(queuePrefix: string, suffix: string): string {
  return `${queuePrefix.slice(0, -1)}-${suffix}}`;
}

/** This worker's resources (Jest numbers its workers from 1; a run in band is worker 1). */
export function testRunResources(): TestRunResources {
  const base = baseRunResources();
  const worker = Number(process.env.JEST_WORKER_ID ?? '1');
  if (!(worker >= 1 && worker <= base.workers)) throw new Error(`Jest worker ${process.env.JEST_WORKER_ID} has no test resources: global setup made ${base.workers}`);
  return workerResources(base, worker);
}

/**
 * A database URL beside this worker's test database, named `<worker's>_<suffix>`,
 * for one suite of its own: the suite creates it (or has a command create it)
 * and drops it.
 */
export function scratchDatabaseUrl(suffix: string): string {
  return databaseUrlBeside(testRunResources().databaseUrl, suffix);
}
