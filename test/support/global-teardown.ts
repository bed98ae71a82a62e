import { rmSync } from 'node:fs';
import { deleteQueueKeys, dropDatabase } from './test-resource-lifecycle';
import { testRunResources } from './test-run-id';

/** Drops what global setup created: the database, the queue keys, the artifacts. */
export default async function globalTeardown(): Promise<void> {
  const { databaseUrl, queuePrefix, artifactsDir } = testRunResources();
  if (process.env.KEEP_TEST_DATA) return;
  rmSync(artifactsDir, { recursive: true, force: true });
  await deleteQueueKeys(queuePrefix);
  await dropDatabase(databaseUrl);
}
