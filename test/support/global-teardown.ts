import { rmSync } from 'node:fs';
import { deleteQueueKeys, dropDatabase } from './test-resource-lifecycle';
import { baseRunResources, workerResources } from './test-run-id';

/** Drops what global setup created: the databases, the queue keys, the artifacts, the workers' and the run's. */
export default async function globalTeardown(): Promise<void> {
  if (process.env.KEEP_TEST_DATA) return;
  const base = baseRunResources();
  rmSync(base.artifactsDir, { recursive: true, force: true });
  for (let worker = 1; worker <= base.workers; worker++) {
    const own = workerResources(base, worker);
    await deleteQueueKeys(own.queuePrefix);
    await dropDatabase(own.databaseUrl);
  }
  await deleteQueueKeys(base.queuePrefix);
  await dropDatabase(base.databaseUrl);
}
